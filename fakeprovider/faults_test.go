package fakeprovider_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

func TestProvider_FaultStatus(t *testing.T) {
	f := newFixture(t, nil)
	a := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	b := f.p.AddSandbox(fakeprovider.SandboxSeed{})

	h := f.p.InjectFault(fakeprovider.Fault{Op: sandbox.OpGetSandbox, SandboxID: a, Status: 503, Times: 2})
	wantError(t, f.p, f.do("GET", "/sandboxes/"+a, nil), 503, "Service Unavailable")
	if res := f.do("GET", "/sandboxes/"+b, nil); res.status != 200 {
		t.Errorf("fault for %s hit %s: %d", a, b, res.status)
	}
	if res := f.do("DELETE", "/sandboxes/"+a+"x", nil); res.status != 404 {
		t.Errorf("fault for get hit kill: %d", res.status)
	}
	wantError(t, f.p, f.do("GET", "/sandboxes/"+a, nil), 503, "Service Unavailable")
	if res := f.do("GET", "/sandboxes/"+a, nil); res.status != 200 {
		t.Errorf("third call after Times 2: %d", res.status)
	}
	if h.Hits() != 2 {
		t.Errorf("Hits = %d, want 2", h.Hits())
	}

	custom := f.p.InjectFault(fakeprovider.Fault{Op: sandbox.OpListSandboxes, Status: 429, Body: `{"code":429,"message":"Rate limit exceeded"}`})
	for range 3 {
		res := f.do("GET", "/v2/sandboxes", nil)
		if res.status != 429 || string(res.body) != `{"code":429,"message":"Rate limit exceeded"}` {
			t.Fatalf("custom body fault: %d %s", res.status, res.body)
		}
	}
	custom.Clear()
	if res := f.do("GET", "/v2/sandboxes", nil); res.status != 200 {
		t.Errorf("after Clear: %d", res.status)
	}

	// Faults apply before auth, and "" matches every op.
	f.p.InjectFault(fakeprovider.Fault{Status: 500})
	wantError(t, f.p, f.doWith("GET", "/v2/sandboxes", nil, nil), 500, "Internal Server Error")
	f.p.ClearFaults()
	if res := f.do("GET", "/v2/sandboxes", nil); res.status != 200 {
		t.Errorf("after ClearFaults: %d", res.status)
	}

	var faults []string
	for _, e := range f.p.Journal().Entries() {
		faults = append(faults, e.Fault)
	}
	if got := strings.Join(faults, ","); got != "status,,,status,,status,status,status,,status," {
		t.Errorf("journaled faults %q", got)
	}
}

func TestProvider_FaultMisusePanics(t *testing.T) {
	f := newFixture(t, nil)
	for _, bad := range []fakeprovider.Fault{
		{Op: "GET /nope"}, {Status: 42}, {Status: 700}, {Times: -1},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("InjectFault(%+v) did not panic", bad)
				}
			}()
			f.p.InjectFault(bad)
		}()
	}
}

func TestProvider_FaultMalformed(t *testing.T) {
	f := newFixture(t, nil)
	id := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	f.p.InjectFault(fakeprovider.Fault{Op: sandbox.OpCreateSandbox, Malformed: true})
	f.p.InjectFault(fakeprovider.Fault{Op: sandbox.OpKillSandbox, Malformed: true})
	f.p.InjectFault(fakeprovider.Fault{Op: sandbox.OpGetSandbox, Malformed: true})
	for _, tt := range []struct {
		method, path string
		status       int
	}{
		{"POST", "/sandboxes", 201},
		{"DELETE", "/sandboxes/" + id, 200},
		{"GET", "/sandboxes/" + id, 200},
	} {
		res := f.do(tt.method, tt.path, map[string]any{"templateID": "base"})
		if res.status != tt.status || json.Valid(res.body) {
			t.Errorf("%s %s: %d %q, want %d and a non-JSON body", tt.method, tt.path, res.status, res.body, tt.status)
		}
		if _, ok := f.p.FindCanary(string(res.body)); !ok {
			t.Errorf("malformed body %q carries no canary", res.body)
		}
	}
	if n := f.p.LiveCount(); n != 1 {
		t.Errorf("malformed create/kill reached the handler: %d live", n)
	}
}

func TestProvider_FaultDelay(t *testing.T) {
	f := newFixture(t, nil)
	f.p.InjectFault(fakeprovider.Fault{Op: sandbox.OpListSandboxes, Delay: 100 * time.Millisecond, Times: 1})
	start := time.Now()
	if res := f.do("GET", "/v2/sandboxes", nil); res.status != 200 {
		t.Fatalf("delayed list: %d", res.status)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("delayed request took %v", d)
	}
	f.p.InjectFault(fakeprovider.Fault{Delay: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", apiBase+"/v2/sandboxes", nil)
	if _, err := f.hc.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("delay past the deadline: err = %v", err)
	}
	if e := f.p.Journal().Entries(); e[0].Fault != "delay" || e[1].Fault != "delay" {
		t.Errorf("journal faults %q %q", e[0].Fault, e[1].Fault)
	}
}

func TestProvider_FaultHang(t *testing.T) {
	f := newFixture(t, nil)
	h := f.p.InjectFault(fakeprovider.Fault{Op: sandbox.OpCreateSandbox, Hang: true})
	done := make(chan response, 2)
	for range 2 {
		go func() { done <- f.do("POST", "/sandboxes", map[string]any{"templateID": "base"}) }()
	}
	select {
	case res := <-done:
		t.Fatalf("hung request returned early: %d", res.status)
	case <-time.After(50 * time.Millisecond):
	}
	if f.p.LiveCount() != 0 {
		t.Fatal("hung create reached the handler")
	}
	h.Release()
	for range 2 {
		select {
		case res := <-done:
			if res.status != 201 {
				t.Errorf("released create: %d %s", res.status, res.body)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Release did not unblock the hang")
		}
	}

	// A hang also ends with the request's context.
	f.p.InjectFault(fakeprovider.Fault{Op: sandbox.OpListSandboxes, Hang: true})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", apiBase+"/v2/sandboxes", nil)
	if _, err := f.hc.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hang past the deadline: err = %v", err)
	}
}

func TestProvider_FaultResetInProcess(t *testing.T) {
	f := newFixture(t, nil)
	f.p.InjectFault(fakeprovider.Fault{Op: sandbox.OpListSandboxes, Reset: true, Times: 1})
	req, _ := http.NewRequest("GET", apiBase+"/v2/sandboxes", nil)
	req.Header.Set("X-API-Key", f.p.APIKey())
	_, err := f.hc.Do(req)
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("err = %v, want ECONNRESET", err)
	}
	if res := f.do("GET", "/v2/sandboxes", nil); res.status != 200 {
		t.Errorf("after Times 1: %d", res.status)
	}
	if e := f.p.Journal().Entries()[0]; e.Fault != "reset" || e.Status != 0 {
		t.Errorf("reset entry %+v", e)
	}
}

func TestProvider_FaultResetLoopback(t *testing.T) {
	f := newFixture(t, nil)
	srv := f.p.Start(t)
	f.p.InjectFault(fakeprovider.Fault{Op: sandbox.OpCreateSandbox, Reset: true, Times: 1})
	// A fresh transport, so the request is never retried on a reused connection.
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	req, _ := http.NewRequest("POST", srv.URL()+"/sandboxes", strings.NewReader(`{"templateID":"base"}`))
	req.Header.Set("X-API-Key", f.p.APIKey())
	res, err := hc.Do(req)
	if err == nil {
		res.Body.Close()
		t.Fatalf("reset fault answered %d", res.StatusCode)
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("err = %v, want ECONNRESET", err)
	}
	req, _ = http.NewRequest("POST", srv.URL()+"/sandboxes", strings.NewReader(`{"templateID":"base"}`))
	req.Header.Set("X-API-Key", f.p.APIKey())
	res, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 201 {
		t.Errorf("after the reset: %d", res.StatusCode)
	}
}
