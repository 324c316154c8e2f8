package fakeprovider_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// createV2 creates a sandbox on POST /v2/sandboxes and returns its body.
func (f *fixture) createV2(body any) map[string]any {
	f.t.Helper()
	res := f.do("POST", "/v2/sandboxes", body)
	if res.status != http.StatusCreated {
		f.t.Fatalf("create v2: status %d, body %s", res.status, res.body)
	}
	return decodeObject(f.t, res.body)
}

func TestProvider_CreateV2(t *testing.T) {
	ds := &daemons{}
	f := newFixture(t, &fakeprovider.Options{NewDaemon: ds.new})

	// NewSandboxV2 (e2b@2.51.0 index.d.ts:2389): no "secure", always
	// secured; timeout defaults to 300 s.
	sb := f.createV2(map[string]any{"templateID": "base", "metadata": map[string]string{"k": "v"}, "envVars": map[string]string{"A": "1"}})
	id := sb["sandboxID"].(string)
	tok, _ := sb["envdAccessToken"].(string)
	if !strings.HasPrefix(tok, "canary-envd-") {
		t.Errorf("envdAccessToken = %v, want a token on every v2 sandbox", sb["envdAccessToken"])
	}
	if cfg := ds.get(id).cfg; cfg.AccessToken != tok {
		t.Errorf("daemon token %q, want %q", cfg.AccessToken, tok)
	}
	rec, _ := f.p.Sandbox(id)
	if !rec.EndAt.Equal(t0.Add(fakeprovider.DefaultCreateTimeoutV2)) {
		t.Errorf("endAt %v, want t0+300s", rec.EndAt)
	}
	// Canaries off: exactly what was sent.
	if len(rec.Metadata) != 1 || rec.Metadata["k"] != "v" || len(rec.EnvVars) != 1 || rec.EnvVars["A"] != "1" {
		t.Errorf("metadata %v, envVars %v: want them as sent", rec.Metadata, rec.EnvVars)
	}
	if n := f.p.Journal().Count(sandbox.OpCreateSandbox); n != 1 {
		t.Errorf("journal: %d creates under %q, want 1", n, sandbox.OpCreateSandbox)
	}
	if e := f.p.Journal().Calls(sandbox.OpCreateSandbox)[0]; e.Path != "/v2/sandboxes" {
		t.Errorf("journalled path %q", e.Path)
	}

	// "secure": false is not part of v2 and does not unsecure it.
	if sb := f.createV2(map[string]any{"templateID": "base", "secure": false, "timeout": 60}); sb["envdAccessToken"] == nil {
		t.Error("v2 sandbox without envdAccessToken")
	}
	for _, tt := range []struct {
		name   string
		body   any
		status int
		msg    string
	}{
		{"templateID missing", map[string]any{}, 400, "validation error: "},
		{"timeout zero", map[string]any{"templateID": "base", "timeout": 0}, 400, "Timeout must be greater than 0"},
		{"network not an object", map[string]any{"templateID": "base", "network": []int{1}}, 400, "validation error: "},
		{"volume mount without path", map[string]any{"templateID": "base", "volumeMounts": []map[string]string{{"name": "v"}}}, 400, "validation error: "},
		{"autoResume without enabled", map[string]any{"templateID": "base", "autoResume": map[string]any{}}, 400, "validation error: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, f.p, f.do("POST", "/v2/sandboxes", tt.body), tt.status, tt.msg)
		})
	}
}

func TestProvider_LifecycleFieldsReported(t *testing.T) {
	f := newFixture(t, nil)
	plain := f.createV2(map[string]any{"templateID": "base"})["sandboxID"].(string)
	rich := f.createV2(map[string]any{
		"templateID": "base", "autoPause": true, "autoPauseMemory": true, "autoResume": map[string]any{"enabled": true},
		"network":               map[string]any{"allowOut": []string{"1.1.1.1"}, "denyOut": []string{"0.0.0.0/0"}},
		"volumeMounts":          []map[string]string{{"name": "vol", "path": "/mnt/v"}},
		"mcp":                   map[string]any{"github": map[string]any{}},
		"allow_internet_access": false,
	})["sandboxID"].(string)

	get := func(id string) map[string]any {
		res := f.do("GET", "/sandboxes/"+id, nil)
		if res.status != 200 {
			t.Fatalf("get %s: %d %s", id, res.status, res.body)
		}
		return decodeObject(t, res.body)
	}
	// SandboxDetail.lifecycle is always set (index.d.ts:2565).
	p := get(plain)
	if lc, _ := p["lifecycle"].(map[string]any); lc["onTimeout"] != "kill" || lc["autoResume"] != false {
		t.Errorf("plain lifecycle %v", p["lifecycle"])
	}
	for _, k := range []string{"network", "volumeMounts"} {
		if _, ok := p[k]; ok {
			t.Errorf("plain sandbox reports %s", k)
		}
	}
	if p["domain"] != nil || p["clientID"] != fakeprovider.ClientID {
		t.Errorf("plain domain %v clientID %v", p["domain"], p["clientID"])
	}
	r := get(rich)
	if lc, _ := r["lifecycle"].(map[string]any); lc["onTimeout"] != "pause" || lc["autoResume"] != true {
		t.Errorf("rich lifecycle %v", r["lifecycle"])
	}
	if n, _ := r["network"].(map[string]any); n == nil || n["allowOut"].([]any)[0] != "1.1.1.1" {
		t.Errorf("network %v", r["network"])
	}
	if v, _ := r["volumeMounts"].([]any); len(v) != 1 || v[0].(map[string]any)["path"] != "/mnt/v" {
		t.Errorf("volumeMounts %v", r["volumeMounts"])
	}
	if r["allowInternetAccess"] != false {
		t.Errorf("allowInternetAccess %v", r["allowInternetAccess"])
	}
	if _, ok := r["mcp"]; ok {
		t.Error("get reports mcp, which SandboxDetail has not")
	}
	if rec, _ := f.p.Sandbox(rich); !rec.AutoPause || !rec.AutoResume {
		t.Errorf("record %+v", rec)
	}

	// At its timeout the autoPause sandbox pauses (keeping its endAt as the
	// pause time) and the plain one dies.
	f.clock.Advance(fakeprovider.DefaultCreateTimeoutV2 + time.Second)
	if rec, ok := f.p.Sandbox(rich); !ok || rec.State != fakeprovider.StatePaused || !rec.EndAt.Equal(t0.Add(fakeprovider.DefaultCreateTimeoutV2)) {
		t.Errorf("autoPause sandbox after timeout: %+v, live %v", rec, ok)
	}
	if _, ok := f.p.Sandbox(plain); ok {
		t.Error("plain sandbox outlived its timeout")
	}
	if s := get(rich); s["state"] != "paused" {
		t.Errorf("state %v", s["state"])
	}
}

func TestProvider_ConnectV2(t *testing.T) {
	f := newFixture(t, nil)
	running := f.p.AddSandbox(fakeprovider.SandboxSeed{EndAt: t0.Add(time.Hour)})
	short := f.p.AddSandbox(fakeprovider.SandboxSeed{EndAt: t0.Add(10 * time.Second)})
	paused := f.p.AddSandbox(fakeprovider.SandboxSeed{State: fakeprovider.StatePaused})

	// ConnectSandboxV2 (index.d.ts:2219): body optional, timeout 300 s.
	for _, body := range []any{nil, `{}`, map[string]any{"memory": true}} {
		res := f.do("POST", "/v2/sandboxes/"+running+"/connect", body)
		if res.status != http.StatusOK {
			t.Fatalf("connect %v: %d %s", body, res.status, res.body)
		}
		if rec, _ := f.p.Sandbox(running); !rec.EndAt.Equal(t0.Add(time.Hour)) {
			t.Errorf("connect %v moved a longer endAt to %v", body, rec.EndAt)
		}
	}
	if res := f.do("POST", "/v2/sandboxes/"+short+"/connect", `{}`); res.status != http.StatusOK {
		t.Fatalf("connect short: %d", res.status)
	}
	if rec, _ := f.p.Sandbox(short); !rec.EndAt.Equal(t0.Add(fakeprovider.DefaultConnectTimeoutV2)) {
		t.Errorf("bare connect: endAt %v, want t0+300s", rec.EndAt)
	}
	res := f.do("POST", "/v2/sandboxes/"+paused+"/connect", map[string]any{"timeout": 60})
	if res.status != http.StatusCreated {
		t.Fatalf("resume: %d %s", res.status, res.body)
	}
	if rec, _ := f.p.Sandbox(paused); rec.State != fakeprovider.StateRunning || !rec.EndAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("resumed %+v", rec)
	}
	if n := f.p.Journal().Count(sandbox.OpConnectSandbox); n != 5 {
		t.Errorf("%d connects journalled under %q, want 5", n, sandbox.OpConnectSandbox)
	}
	wantError(t, f.p, f.do("POST", "/v2/sandboxes/inope/connect", nil), 404, `Sandbox "inope" doesn't exist`)
	wantError(t, f.p, f.do("POST", "/v2/sandboxes/"+running+"/connect", `{"timeout":-1}`), 400, "validation error: ")
	wantError(t, f.p, f.do("POST", "/v2/sandboxes/"+running+"/connect", `{`), 400, "Error when parsing request: ")
	// v1 still requires the timeout.
	wantError(t, f.p, f.do("POST", "/sandboxes/"+running+"/connect", `{}`), 400, "validation error: ")
}

func TestProvider_RouteFamilies(t *testing.T) {
	for _, tt := range []struct {
		family         fakeprovider.RouteFamily
		served, absent string
	}{
		{fakeprovider.V1Routes, "/sandboxes", "/v2/sandboxes"},
		{fakeprovider.V2Routes, "/v2/sandboxes", "/sandboxes"},
	} {
		f := newFixture(t, &fakeprovider.Options{Routes: tt.family})
		if res := f.do("POST", tt.served, map[string]any{"templateID": "base", "timeout": 60}); res.status != http.StatusCreated {
			t.Errorf("family %d: %s gave %d", tt.family, tt.served, res.status)
		}
		wantError(t, f.p, f.do("POST", tt.absent, map[string]any{"templateID": "base"}), 404, "Not Found")
		id := f.p.LiveSandboxes()[0].ID
		wantError(t, f.p, f.do("POST", tt.absent+"/"+id+"/connect", map[string]any{"timeout": 60}), 404, "Not Found")
		if res := f.do("POST", tt.served+"/"+id+"/connect", map[string]any{"timeout": 60}); res.status != http.StatusOK {
			t.Errorf("family %d: connect on %s gave %d", tt.family, tt.served, res.status)
		}
		// A refused route is not an operation: nothing else is journalled.
		if n := f.p.Journal().Count(sandbox.OpCreateSandbox); n != 1 {
			t.Errorf("family %d: %d creates journalled, want 1", tt.family, n)
		}
	}
}

func TestProvider_Pause(t *testing.T) {
	f := newFixture(t, nil)
	id := f.p.AddSandbox(fakeprovider.SandboxSeed{EndAt: t0.Add(time.Hour)})
	f.clock.Advance(time.Minute)
	res := f.do("POST", "/sandboxes/"+id+"/pause", nil)
	if res.status != http.StatusNoContent || len(res.body) != 0 {
		t.Fatalf("pause: %d %s", res.status, res.body)
	}
	rec, _ := f.p.Sandbox(id)
	if rec.State != fakeprovider.StatePaused || !rec.EndAt.Equal(t0.Add(time.Minute)) || !rec.HasDaemon {
		t.Errorf("after pause %+v", rec)
	}
	// Not running: 409 (SandboxPauseRequest responses, index.d.ts:429).
	wantError(t, f.p, f.do("POST", "/sandboxes/"+id+"/pause", map[string]any{"memory": true}), 409, `Sandbox '`+id+`' cannot be paused while in 'paused' state`)
	other := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	f.p.SetState(other, fakeprovider.StateSnapshotting)
	wantError(t, f.p, f.do("POST", "/sandboxes/"+other+"/pause", nil), 409, `Sandbox '`+other+`' cannot be paused while in 'snapshotting' state`)
	wantError(t, f.p, f.do("POST", "/sandboxes/inope/pause", nil), 404, `Sandbox "inope" doesn't exist`)
	wantError(t, f.p, f.do("POST", "/sandboxes/"+id+"/pause", `{`), 400, "Error when parsing request: ")
	// Listed as paused, never expires, connect resumes it.
	f.clock.Advance(48 * time.Hour)
	if l := listIDs(t, f.do("GET", "/v2/sandboxes?state=paused", nil)); len(l) != 1 || l[0] != id {
		t.Errorf("paused list %v", l)
	}
	if res := f.do("POST", "/v2/sandboxes/"+id+"/connect", nil); res.status != http.StatusCreated {
		t.Errorf("resume: %d", res.status)
	}
}

func TestProvider_Metrics(t *testing.T) {
	f := newFixture(t, nil)
	id := f.p.AddSandbox(fakeprovider.SandboxSeed{EndAt: t0.Add(time.Hour)})
	f.clock.Advance(12 * time.Second)
	l := decodeList(t, f.do("GET", "/sandboxes/"+id+"/metrics", nil).body)
	if len(l) != 3 {
		t.Fatalf("%d samples over 12 s, want 3 (every 5 s): %v", len(l), l)
	}
	// SandboxMetric (index.d.ts:2610): every field present.
	for _, k := range []string{"timestamp", "timestampUnix", "cpuCount", "cpuUsedPct", "memUsed", "memTotal", "memCache", "diskUsed", "diskTotal"} {
		if _, ok := l[0][k]; !ok {
			t.Errorf("sample lacks %s", k)
		}
	}
	if l[0]["memTotal"] != float64(512<<20) || l[2]["timestampUnix"] != float64(t0.Add(10*time.Second).Unix()) {
		t.Errorf("samples %v", l)
	}
	start := t0.Add(5 * time.Second).Unix()
	if l := decodeList(t, f.do("GET", "/sandboxes/"+id+"/metrics?start="+strconv.FormatInt(start, 10)+"&end="+strconv.FormatInt(start, 10), nil).body); len(l) != 1 {
		t.Errorf("window of one instant: %v", l)
	}
	wantError(t, f.p, f.do("GET", "/sandboxes/"+id+"/metrics?start=soon", nil), 400, "validation error: ")
	wantError(t, f.p, f.do("GET", "/sandboxes/inope/metrics", nil), 404, `Sandbox "inope" doesn't exist`)
}

func TestProvider_LegacyList(t *testing.T) {
	f := newFixture(t, nil)
	seedList(f)
	l := listIDs(t, f.do("GET", "/sandboxes?metadata="+url.QueryEscape("team=a"), nil))
	if strings.Join(l, ",") != "s0,s2,s4" {
		t.Errorf("legacy list %v, want the running team-a sandboxes s0,s2,s4", l)
	}
	wantError(t, f.p, f.do("GET", "/sandboxes?metadata="+url.QueryEscape("noequals"), nil), 400, "Error parsing metadata")
}

func TestProvider_RetryAfterOn429(t *testing.T) {
	f := newFixture(t, &fakeprovider.Options{SandboxLimit: 1})
	f.createV2(map[string]any{"templateID": "base"})
	res := f.do("POST", "/v2/sandboxes", map[string]any{"templateID": "base"})
	wantError(t, f.p, res, 429, "you have reached the maximum number of concurrent E2B sandboxes (1)")
	if got := res.header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After = %q, want 1", got)
	}
}

func TestProvider_CanaryModeOn(t *testing.T) {
	f := newFixture(t, &fakeprovider.Options{Canaries: true})
	sb := f.createV2(map[string]any{"templateID": "base", "metadata": map[string]string{"k": "v"}})
	id := sb["sandboxID"].(string)
	if c, _ := sb["clientID"].(string); !strings.HasPrefix(c, "canaryclient") || strings.Contains(c, "-") {
		t.Errorf("clientID %v: want a dash-free canary (SDK 1.x splits \"<id>-<clientID>\" on the dash)", sb["clientID"])
	}
	if d, _ := sb["domain"].(string); !strings.HasPrefix(d, "canary-domain-") {
		t.Errorf("domain %v", sb["domain"])
	}
	rec, _ := f.p.Sandbox(id)
	if _, ok := rec.Metadata[fakeprovider.CanaryMetadataKey]; !ok || len(rec.Metadata) != 2 {
		t.Errorf("metadata %v", rec.Metadata)
	}
	if _, ok := rec.EnvVars[fakeprovider.CanaryEnvVar]; !ok {
		t.Errorf("envVars %v", rec.EnvVars)
	}
	if !f.p.CanaryMode() {
		t.Error("CanaryMode() = false")
	}
	wantError(t, f.p, f.do("GET", "/sandboxes/inope", nil), 404, `Sandbox "inope"`)
}

func TestProvider_SeedAutoPause(t *testing.T) {
	f := newFixture(t, nil)
	id := f.p.AddSandbox(fakeprovider.SandboxSeed{EndAt: t0.Add(time.Minute), AutoPause: true, AutoResume: true})
	if lc, _ := decodeObject(t, f.do("GET", "/sandboxes/"+id, nil).body)["lifecycle"].(map[string]any); lc["onTimeout"] != "pause" || lc["autoResume"] != true {
		t.Errorf("seeded lifecycle %v", lc)
	}
	f.clock.Advance(2 * time.Minute)
	if rec, ok := f.p.Sandbox(id); !ok || rec.State != fakeprovider.StatePaused {
		t.Errorf("seeded autoPause sandbox after EndAt: %+v, live %v", rec, ok)
	}
}
