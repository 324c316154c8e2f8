package fakeprovider_test

import (
	"encoding/base64"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// listIDs decodes a list answer into its sandbox IDs.
func listIDs(t *testing.T, res response) []string {
	t.Helper()
	if res.status != 200 {
		t.Fatalf("list: status %d %s", res.status, res.body)
	}
	var ids []string
	for _, l := range decodeList(t, res.body) {
		ids = append(ids, l["sandboxID"].(string))
	}
	return ids
}

// seedList plants sandboxes s0..s4 started a minute apart (s3 and s4 at the
// same instant, to test the ID tie-break), with s1 and s3 paused, and metadata.
func seedList(f *fixture) []string {
	var ids []string
	for _, seed := range []fakeprovider.SandboxSeed{
		{ID: "s0", StartedAt: t0.Add(-5 * time.Minute), Metadata: map[string]string{"env": "prod", "team": "a"}},
		{ID: "s1", StartedAt: t0.Add(-4 * time.Minute), State: fakeprovider.StatePaused, Metadata: map[string]string{"env": "prod", "team": "b"}},
		{ID: "s2", StartedAt: t0.Add(-3 * time.Minute), Metadata: map[string]string{"env": "dev", "team": "a"}, Template: "code-interpreter-v1"},
		{ID: "s3", StartedAt: t0.Add(-2 * time.Minute), State: fakeprovider.StatePaused, Metadata: map[string]string{"env": "prod", "team": "a", "a b": "c&d"}},
		{ID: "s4", StartedAt: t0.Add(-2 * time.Minute), Metadata: map[string]string{"env": "prod", "team": "a"}},
	} {
		ids = append(ids, f.p.AddSandbox(seed))
	}
	return ids
}

func TestProvider_ListFilters(t *testing.T) {
	f := newFixture(t, nil)
	seedList(f)
	killing := f.p.AddSandbox(fakeprovider.SandboxSeed{ID: "s9", StartedAt: t0.Add(-time.Minute)})
	f.p.SetState(killing, fakeprovider.StateKilling)
	pausing := f.p.AddSandbox(fakeprovider.SandboxSeed{ID: "s8", StartedAt: t0.Add(-90 * time.Second)})
	f.p.SetState(pausing, fakeprovider.StatePausing)

	meta := func(pairs string) string { return url.QueryEscape(pairs) }
	tests := []struct {
		name         string
		query        string
		want         []string
		totalRunning string // "" = header absent
	}{
		{"default: both states, newest first", "", []string{"s8", "s4", "s3", "s2", "s1", "s0"}, "3"},
		{"running", "?state=running", []string{"s4", "s2", "s0"}, "3"},
		{"paused (pausing shows as paused)", "?state=paused", []string{"s8", "s3", "s1"}, ""},
		{"both, comma-separated", "?state=paused,running&order=asc", []string{"s0", "s1", "s2", "s3", "s4", "s8"}, "3"},
		{"both, repeated", "?state=paused&state=running&order=asc", []string{"s0", "s1", "s2", "s3", "s4", "s8"}, "3"},
		{"metadata one pair", "?metadata=" + meta("env=dev"), []string{"s2"}, "3"},
		{"metadata all pairs must match", "?metadata=" + meta("env=prod&team=a"), []string{"s4", "s3", "s0"}, "3"},
		// As the Python SDK sends it: urlencode({quote(k): quote(v)}), so
		// key and value are escaped twice inside the (escaped) query value.
		{"metadata escaped key and value", "?metadata=" + meta(url.QueryEscape(url.QueryEscape("a b"))+"="+url.QueryEscape(url.QueryEscape("c&d"))), []string{"s3"}, "3"},
		{"metadata no match", "?metadata=" + meta("env=none"), nil, "3"},
		{"template by alias", "?template=code-interpreter-v1", []string{"s2"}, "3"},
		// At or after: s2 started exactly at the bound (e2b-dev/infra
		// packages/api/internal/handlers/sandboxes_list.go: startedAt >= bound).
		{"startedAfter includes an exact match", "?order=asc&startedAfter=" + url.QueryEscape(t0.Add(-3*time.Minute).Format(time.RFC3339)), []string{"s2", "s3", "s4", "s8"}, "3"},
		{"startedAfter", "?order=asc&startedAfter=" + url.QueryEscape(t0.Add(-3*time.Minute+time.Microsecond).Format(time.RFC3339Nano)), []string{"s3", "s4", "s8"}, "3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.do("GET", "/v2/sandboxes"+tt.query, nil)
			if got := listIDs(t, res); !slices.Equal(got, tt.want) {
				t.Errorf("ids = %v, want %v", got, tt.want)
			}
			if got := res.header.Get("X-Total-Running"); got != tt.totalRunning {
				t.Errorf("X-Total-Running = %q, want %q", got, tt.totalRunning)
			}
			if _, ok := res.header["X-Next-Token"]; ok {
				t.Error("X-Next-Token on a complete page")
			}
		})
	}

	t.Run("item fields", func(t *testing.T) {
		l := decodeList(t, f.do("GET", "/v2/sandboxes?state=running&limit=1", nil).body)[0]
		want := map[string]any{
			"templateID": "rki5dems9wqfm4r03t7g", "alias": "base", "sandboxID": "s4",
			"startedAt": "2026-03-01T11:58:00Z", "endAt": "2026-03-01T12:05:00Z",
			"cpuCount": 2.0, "memoryMB": 512.0, "diskSizeMB": 512.0, "state": "running", "envdVersion": "0.6.13",
		}
		for k, v := range want {
			if l[k] != v {
				t.Errorf("%s = %v, want %v", k, l[k], v)
			}
		}
		for _, k := range []string{"envdAccessToken", "domain", "trafficAccessToken"} {
			if _, ok := l[k]; ok {
				t.Errorf("listed item has %q", k)
			}
		}
		// Canaries off: metadata comes back exactly as it was seeded.
		if m, _ := l["metadata"].(map[string]any); len(m) != 2 || m["env"] != "prod" || m["team"] != "a" {
			t.Errorf("metadata %v", l["metadata"])
		}
	})
}

func TestProvider_ListPaging(t *testing.T) {
	f := newFixture(t, nil)
	seedList(f)
	for _, tt := range []struct {
		order string
		want  []string
	}{
		{"", []string{"s4", "s3", "s2", "s1", "s0"}},
		{"desc", []string{"s4", "s3", "s2", "s1", "s0"}},
		{"asc", []string{"s0", "s1", "s2", "s3", "s4"}},
	} {
		t.Run("order="+tt.order, func(t *testing.T) {
			var got []string
			token, pages := "", 0
			for {
				q := url.Values{"limit": {"2"}}
				if tt.order != "" {
					q.Set("order", tt.order)
				}
				if token != "" {
					q.Set("nextToken", token)
				}
				res := f.do("GET", "/v2/sandboxes?"+q.Encode(), nil)
				page := listIDs(t, res)
				got = append(got, page...)
				pages++
				token = res.header.Get("X-Next-Token")
				if token == "" {
					break
				}
				if len(page) != 2 {
					t.Fatalf("page %d has %d items and a next token", pages, len(page))
				}
				raw, err := base64.URLEncoding.DecodeString(token)
				if err != nil {
					t.Fatalf("token %q is not base64url: %v", token, err)
				}
				if last := page[len(page)-1]; !strings.Contains(string(raw), "__"+last) {
					t.Errorf("token %q does not name the last item %s", raw, last)
				}
			}
			if pages != 3 || !slices.Equal(got, tt.want) {
				t.Errorf("%d pages, ids %v; want 3 pages, %v", pages, got, tt.want)
			}
		})
	}
	t.Run("exact fit has no next token", func(t *testing.T) {
		res := f.do("GET", "/v2/sandboxes?limit=5", nil)
		if len(listIDs(t, res)) != 5 || res.header.Get("X-Next-Token") != "" {
			t.Errorf("limit=5 of 5: token %q", res.header.Get("X-Next-Token"))
		}
	})
}

func TestProvider_ListErrors(t *testing.T) {
	f := newFixture(t, nil)
	seedList(f)
	b64 := func(s string) string { return base64.URLEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name, query, msg string
	}{
		{"limit zero", "limit=0", "validation error: "},
		{"limit negative", "limit=-1", "validation error: "},
		{"limit above 100", "limit=101", "validation error: "},
		{"limit not an integer", "limit=abc", "validation error: "},
		{"limit fractional", "limit=1.5", "validation error: "},
		{"bad state", "state=stopped", "validation error: "},
		{"bad order", "order=up", `Invalid order parameter: unknown order "up"`},
		{"token not base64", "nextToken=%21%21%21", "Invalid next token"},
		{"token without separator", "nextToken=" + b64("nothing"), "Invalid next token"},
		{"token bad time", "nextToken=" + b64("yesterday__s1"), "Invalid next token"},
		{"token bad ID", "nextToken=" + b64(t0.Format(time.RFC3339Nano)+"__S!"), "Invalid next token"},
		{"metadata without =", "metadata=" + url.QueryEscape("env"), "Error parsing metadata"},
		{"metadata two =", "metadata=" + url.QueryEscape("a=b=c"), "Error parsing metadata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, f.p, f.do("GET", "/v2/sandboxes?"+tt.query, nil), 400, tt.msg)
		})
	}
	for _, ok := range []string{"limit=1", "limit=100", "nextToken=" + b64(t0.Format(time.RFC3339Nano)+"__s3")} {
		if res := f.do("GET", "/v2/sandboxes?"+ok, nil); res.status != 200 {
			t.Errorf("%s: status %d %s", ok, res.status, res.body)
		}
	}
}
