package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
)

// mockPlatform returns a Platform whose requests go to a fresh httpmock
// transport (no global activation), with one extra provider "acme".
func mockPlatform(t *testing.T, sized bool) (*Platform, *httpmock.MockTransport) {
	t.Helper()
	mt := httpmock.NewMockTransport()
	cfg := &Config{Providers: []ProviderConfig{{ID: "acme", APIURL: "https://api.acme.test", APIKeyEnv: "ACME_KEY",
		Domain: "acme.test", SizedSandboxes: sized, Regions: map[string]string{"eu": "https://eu.acme.test"}}}}
	p, err := NewPlatform(&Options{
		Getenv:     envMap(map[string]string{EnvAPIKey: "e2b_testkey", "ACME_KEY": "acme_testkey"}),
		HTTPClient: &http.Client{Transport: mt},
		Config:     cfg,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p, mt
}

// listedRows builds n list items with IDs s000, s001, ...
func listedRows(from, n int) []map[string]any {
	rows := make([]map[string]any, n)
	for i := range rows {
		rows[i] = map[string]any{"sandboxID": fmt.Sprintf("s%03d", from+i), "templateID": "base", "state": "running",
			"startedAt": "2026-01-02T03:04:05.123456789+01:00", "endAt": "2026-01-02T04:04:05Z",
			"cpuCount": 2, "memoryMB": 512, "diskSizeMB": 1024, "clientID": "c", "envdVersion": "0.4.3"}
	}
	return rows
}

func TestList_WalksPagesToHonourOffset(t *testing.T) {
	p, mt := mockPlatform(t, false)
	const total = 250
	var mu sync.Mutex
	var limits []int
	mt.RegisterResponder("GET", "https://api.e2b.app/v2/sandboxes", func(r *http.Request) (*http.Response, error) {
		q := r.URL.Query()
		for k := range q {
			if k != "limit" && k != "nextToken" && k != "state" && k != "metadata" {
				t.Errorf("query parameter %q is not the platform's", k)
			}
		}
		limit, _ := strconv.Atoi(q.Get("limit"))
		mu.Lock()
		limits = append(limits, limit)
		mu.Unlock()
		start := 0
		if tok := q.Get("nextToken"); tok != "" {
			start, _ = strconv.Atoi(strings.TrimPrefix(tok, "tok"))
		}
		end := min(total, start+limit)
		resp, _ := httpmock.NewJsonResponse(200, listedRows(start, end-start))
		if end < total {
			resp.Header.Set("X-Next-Token", "tok"+strconv.Itoa(end))
		}
		return resp, nil
	})

	got, err := p.List(context.Background(), &ListOptions{Limit: 30, Offset: 180})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 30 || got[0].SandboxID != "s180" || got[29].SandboxID != "s209" {
		t.Fatalf("got %d items, first %q", len(got), got[0].SandboxID)
	}
	for _, l := range limits {
		if l > MaxListLimit || l < 1 {
			t.Errorf("asked the platform for %d items", l)
		}
	}
	// 210 sandboxes must be walked: pages of 100, 100 and the last 10.
	if fmt.Sprint(limits) != "[100 100 10]" {
		t.Errorf("page sizes asked %v, want [100 100 10]", limits)
	}

	// Past the end: a short or empty page, no error.
	got, err = p.List(context.Background(), &ListOptions{Limit: 100, Offset: 240})
	if err != nil || len(got) != 10 {
		t.Fatalf("tail page: %d items, %v", len(got), err)
	}
	got, err = p.List(context.Background(), &ListOptions{Offset: 1000})
	if err != nil || len(got) != 0 {
		t.Fatalf("beyond the end: %d items, %v", len(got), err)
	}
}

func TestList_MapsMetadataFields(t *testing.T) {
	p, mt := mockPlatform(t, false)
	mt.RegisterResponder("GET", "https://api.e2b.app/v2/sandboxes", func(r *http.Request) (*http.Response, error) {
		rows := listedRows(0, 2)
		rows[0]["alias"] = "my-template"
		delete(rows[1], "cpuCount")
		delete(rows[1], "startedAt")
		rows[1]["memoryMB"] = -1 // older platforms' "unknown"
		return httpmock.NewJsonResponse(200, rows)
	})
	got, err := p.List(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Template != "my-template" || got[1].Template != "base" {
		t.Errorf("template: %q %q", got[0].Template, got[1].Template)
	}
	if got[0].StartedAt == nil || got[0].StartedAt.Location() != time.UTC || got[0].StartedAt.Hour() != 2 {
		t.Errorf("started_at not converted to UTC: %v", got[0].StartedAt)
	}
	if got[1].CPUCount != nil || got[1].StartedAt != nil || got[1].MemoryMB != nil {
		t.Errorf("absent fields must stay nil, got %+v", got[1])
	}
	data, _ := json.Marshal(got[1])
	var keys map[string]any
	_ = json.Unmarshal(data, &keys)
	want := []string{"sandbox_id", "template", "status", "region", "started_at", "end_at", "cpu_count", "memory_mb", "disk_size_mb"}
	if len(keys) != len(want) {
		t.Errorf("Info JSON has keys %v", keys)
	}
	for _, k := range want {
		if _, ok := keys[k]; !ok {
			t.Errorf("Info JSON lacks %q", k)
		}
	}
	if keys["cpu_count"] != nil {
		t.Errorf("absent cpu_count must be null, got %v", keys["cpu_count"])
	}
}

func TestList_ValidatesBeforeAnyRequest(t *testing.T) {
	p, mt := mockPlatform(t, false)
	cases := []struct {
		name  string
		opts  ListOptions
		field string
	}{
		{"limit too big", ListOptions{Limit: 101}, "limit"},
		{"limit negative", ListOptions{Limit: -1}, "limit"},
		{"offset negative", ListOptions{Offset: -1}, "offset"},
		{"bad state", ListOptions{States: []State{"deleted"}}, "status"},
		{"unknown provider", ListOptions{Provider: "nope"}, "provider"},
		{"unknown region", ListOptions{Provider: "acme", Region: "mars"}, "region"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			_, err := p.List(context.Background(), &tt.opts)
			var e *Error
			if !errors.As(err, &e) || e.Category != InvalidArgument || e.Field != tt.field {
				t.Fatalf("got %v, want invalid_argument on %s", err, tt.field)
			}
		})
	}
	if n := mt.GetTotalCallCount(); n != 0 {
		t.Errorf("made %d requests for invalid input", n)
	}
}

func TestCreate_ResourcesOnlyWhereAccepted(t *testing.T) {
	var bodies []map[string]any
	responder := func(r *http.Request) (*http.Response, error) {
		var b map[string]any
		_ = json.NewDecoder(r.Body).Decode(&b)
		bodies = append(bodies, b)
		return httpmock.NewJsonResponse(201, map[string]any{"sandboxID": "inew", "templateID": "base", "clientID": "c",
			"envdVersion": "0.4.3", "envdAccessToken": "tok", "domain": "d.test"})
	}

	p, mt := mockPlatform(t, false)
	mt.RegisterResponder("POST", "https://api.e2b.app/sandboxes", responder)
	_, err := p.Create(context.Background(), &CreateOptions{CPUCount: 2})
	var e *Error
	if !errors.As(err, &e) || e.Category != InvalidArgument || e.Field != "cpu" || mt.GetTotalCallCount() != 0 {
		t.Fatalf("cpu on an unsized provider: %v after %d calls", err, mt.GetTotalCallCount())
	}
	sbx, err := p.Create(context.Background(), &CreateOptions{Template: "base", Timeout: 1500 * time.Millisecond,
		EnvVars: map[string]string{"A": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if sbx.ID() != "inew" || sbx.Info().Status != StateRunning {
		t.Errorf("handle %q %+v", sbx.ID(), sbx.Info())
	}
	if b := bodies[0]; b["timeout"] != 2.0 || b["templateID"] != "base" || b["cpuCount"] != nil || b["memoryMB"] != nil {
		t.Errorf("create body %v", b)
	}

	sized, mt2 := mockPlatform(t, true)
	mt2.RegisterResponder("POST", "https://eu.acme.test/sandboxes", responder)
	sbx, err = sized.Create(context.Background(), &CreateOptions{Provider: "acme", Region: "eu", CPUCount: 4, MemoryMB: 2048})
	if err != nil {
		t.Fatal(err)
	}
	if b := bodies[1]; b["cpuCount"] != 4.0 || b["memoryMB"] != 2048.0 || b["timeout"] != 300.0 {
		t.Errorf("sized create body %v", b)
	}
	if sbx.ID() != "acme:inew" || sbx.Info().Region == nil || *sbx.Info().Region != "eu" {
		t.Errorf("qualified handle %q region %v", sbx.ID(), sbx.Info().Region)
	}
	if sbx.envdAccessToken != "tok" || sbx.domain != "d.test" {
		t.Errorf("data-plane secrets not kept on the handle")
	}
}

func TestByID_MarksConnectionClose(t *testing.T) {
	p, mt := mockPlatform(t, false)
	var closes []bool
	record := func(status int) httpmock.Responder {
		return func(r *http.Request) (*http.Response, error) {
			closes = append(closes, r.Close)
			if status == 200 {
				return httpmock.NewJsonResponse(200, listedRows(0, 1)[0])
			}
			return httpmock.NewStringResponse(status, ""), nil
		}
	}
	mt.RegisterResponder("GET", "https://api.e2b.app/sandboxes/s000", record(200))
	mt.RegisterResponder("POST", "https://api.e2b.app/sandboxes/s000/timeout", record(204))
	mt.RegisterResponder("DELETE", "https://api.e2b.app/sandboxes/s000", record(204))
	ctx := context.Background()
	if _, err := p.GetInfoByID(ctx, "s000", &CallOptions{SandboxDomain: "ignored.test"}); err != nil {
		t.Fatal(err)
	}
	if err := p.SetTimeoutByID(ctx, "e2b:s000", time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.KillByID(ctx, "s000", nil); err != nil {
		t.Fatal(err)
	}
	for i, c := range closes {
		if !c {
			t.Errorf("by-ID request %d kept its connection", i)
		}
	}
	info := mt.GetCallCountInfo()
	for k, n := range info {
		if strings.Contains(k, "connect") && n > 0 {
			t.Errorf("by-ID call made a connect request: %s", k)
		}
	}
}

func TestErrors_NeverCarryProviderText(t *testing.T) {
	const canary = "canary-7f3a9"
	p, mt := mockPlatform(t, false)
	for status := 400; status <= 599; status++ {
		if http.StatusText(status) == "" {
			continue
		}
		mt.RegisterResponder("GET", "https://api.e2b.app/sandboxes/s"+strconv.Itoa(status), httpmock.NewStringResponder(status,
			fmt.Sprintf(`{"code":%d,"message":"boom %s at https://api.e2b.app/x?key=e2b_testkey","error_code":"sandbox_create_failed"}`, status, canary)))
	}
	for status := 400; status <= 599; status++ {
		if http.StatusText(status) == "" {
			continue
		}
		_, err := p.GetInfoByID(context.Background(), "s"+strconv.Itoa(status), nil)
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("status %d: got %v", status, err)
		}
		if e.HTTPStatus != status || e.Category != CategoryForStatus(status) || e.Code != "sandbox_create_failed" {
			t.Errorf("status %d: got %+v", status, e)
		}
		for _, bad := range []string{canary, "https://", "e2b_testkey", "boom"} {
			if strings.Contains(e.Error(), bad) {
				t.Errorf("status %d: error text %q contains %q", status, e.Error(), bad)
			}
		}
	}
}

func TestErrors_MalformedAndTransport(t *testing.T) {
	p, mt := mockPlatform(t, false)
	mt.RegisterResponder("GET", "https://api.e2b.app/sandboxes/bad", httpmock.NewStringResponder(200, "<html>not json"))
	mt.RegisterResponder("GET", "https://api.e2b.app/sandboxes/down", httpmock.NewErrorResponder(fmt.Errorf("dial tcp https://api.e2b.app: %w", errors.New("connection refused"))))
	_, err := p.GetInfoByID(context.Background(), "bad", nil)
	if CategoryOf(err) != ProviderError {
		t.Errorf("malformed body: %v", err)
	}
	_, err = p.GetInfoByID(context.Background(), "down", nil)
	if CategoryOf(err) != Unavailable || strings.Contains(err.Error(), "https://") {
		t.Errorf("transport failure: %v", err)
	}
}

func TestMissingCredentials(t *testing.T) {
	mt := httpmock.NewMockTransport()
	p, err := NewPlatform(&Options{Getenv: envMap(nil), HTTPClient: &http.Client{Transport: mt}})
	if err != nil {
		t.Fatal(err)
	}
	if p.HasCredentials(DefaultProviderID) {
		t.Error("HasCredentials with no key")
	}
	_, err = p.List(context.Background(), nil)
	if CategoryOf(err) != Unauthenticated || mt.GetTotalCallCount() != 0 {
		t.Errorf("got %v after %d calls", err, mt.GetTotalCallCount())
	}
	_, err = p.GetInfoByID(context.Background(), "x", &CallOptions{APIKey: "e2b_override"})
	if err == nil || CategoryOf(err) == Unauthenticated {
		t.Errorf("an override key must be used: %v", err)
	}
}

func TestRequestTimeoutDefault(t *testing.T) {
	mt := httpmock.NewMockTransport()
	// The responder answers only when the request's context ends: only the
	// default timeout can end this call (the caller's context has none).
	// Without it the responder gives up after a minute with a plain error.
	mt.RegisterResponder("GET", "https://api.e2b.app/sandboxes/slow", func(r *http.Request) (*http.Response, error) {
		select {
		case <-r.Context().Done():
			return nil, r.Context().Err()
		case <-time.After(time.Minute):
			return nil, errors.New("no request timeout applied")
		}
	})
	p, _ := NewPlatform(&Options{Getenv: envMap(map[string]string{EnvAPIKey: "e2b_k"}), HTTPClient: &http.Client{Transport: mt},
		RequestTimeout: 50 * time.Millisecond})
	_, err := p.GetInfoByID(context.Background(), "slow", nil)
	if CategoryOf(err) != Timeout || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want the default request timeout's deadline_exceeded", err)
	}
}
