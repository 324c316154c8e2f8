package fakeprovider_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// TestLegacyRoutes checks resume, refreshes, logs and the sandboxes'
// metrics against infra's handlers (sandbox_resume.go, sandbox_refresh.go,
// sandbox_logs.go, sandboxes_list_metrics.go).
func TestLegacyRoutes(t *testing.T) {
	f := newFixture(t, nil)
	id := f.create(map[string]any{"templateID": "base", "timeout": 60})["sandboxID"].(string)
	wantError(t, f.p, f.do("POST", "/sandboxes/"+id+"/resume", nil), http.StatusConflict, "Sandbox "+id+" is already running")
	if res := f.do("POST", "/sandboxes/"+id+"/pause", nil); res.status != http.StatusNoContent {
		t.Fatalf("pause %d", res.status)
	}
	if res := f.do("POST", "/sandboxes/"+id+"/resume", map[string]any{"timeout": 60}); res.status != http.StatusCreated {
		t.Fatalf("resume %d %s", res.status, res.body)
	}
	// refreshes extends, never shortens, and at least by 15 s.
	endOf := func() string { return decodeObject(t, f.do("GET", "/sandboxes/"+id, nil).body)["endAt"].(string) }
	before := endOf()
	if res := f.do("POST", "/sandboxes/"+id+"/refreshes", map[string]any{"duration": 1}); res.status != http.StatusNoContent {
		t.Fatalf("refresh %d", res.status)
	}
	if endOf() != before {
		t.Errorf("a refresh shorter than the timeout moved endAt")
	}
	f.do("POST", "/sandboxes/"+id+"/refreshes", map[string]any{"duration": 600})
	if want := f.p.Now().Add(600 * time.Second).Format(time.RFC3339Nano); endOf() != want {
		t.Errorf("endAt %s, want %s", endOf(), want)
	}
	if l := decodeObject(t, f.do("GET", "/sandboxes/"+id+"/logs", nil).body); l["logs"] == nil || l["logEntries"] == nil {
		t.Errorf("logs %v", l)
	}
	if l := decodeObject(t, f.do("GET", "/v2/sandboxes/"+id+"/logs", nil).body); l["logs"] == nil {
		t.Errorf("v2 logs %v", l)
	}
	m := decodeObject(t, f.do("GET", "/sandboxes/metrics?sandbox_ids="+id+",inope", nil).body)
	if got, _ := m["sandboxes"].(map[string]any); len(got) != 1 || got[id] == nil {
		t.Errorf("metrics %v", m)
	}
	wantError(t, f.p, f.do("GET", "/sandboxes/inope/logs", nil), 404, `Sandbox "inope" doesn't exist`)
	wantError(t, f.p, f.do("POST", "/sandboxes/inope/resume", nil), 404, `Sandbox "inope" doesn't exist`)
	wantError(t, f.p, f.doWith("GET", "/sandboxes/"+id+"/logs", nil, nil), 401, "authorization header is missing")
	if n := f.p.Journal().Count(fakeprovider.RouteSandboxLogs); n != 3 {
		t.Errorf("journal counts %d log requests, want 3", n)
	}
}
