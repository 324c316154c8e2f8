package fakeprovider_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

func TestProvider_Auth(t *testing.T) {
	f := newFixture(t, nil)
	tests := []struct {
		name    string
		headers map[string]string
		status  int
		msg     string
	}{
		{"missing", nil, 401, "authorization header is missing"},
		{"empty", map[string]string{"X-API-Key": ""}, 401, "authorization header is missing"},
		{"no e2b_ prefix", map[string]string{"X-API-Key": "sk_123"}, 401, "authorization header is malformed"},
		{"wrong key", map[string]string{"X-API-Key": "e2b_0000"}, 401, "Invalid API key, please visit https://e2b.dev/docs/api-key for more information."},
		{"bearer is not a key", map[string]string{"Authorization": "Bearer " + f.p.APIKey()}, 401, "authorization header is missing"},
		{"right key", map[string]string{"X-API-Key": f.p.APIKey()}, 200, ""},
		{"header name case-insensitive", map[string]string{"x-api-key": f.p.APIKey()}, 200, ""},
		{"python SDK spelling", map[string]string{"X-API-KEY": f.p.APIKey()}, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.doWith("GET", "/v2/sandboxes", nil, tt.headers)
			if tt.status == 200 {
				if res.status != 200 {
					t.Fatalf("status %d, body %s", res.status, res.body)
				}
				return
			}
			wantError(t, f.p, res, tt.status, tt.msg)
		})
	}
	if k := f.p.APIKey(); !regexp.MustCompile(`^e2b_[0-9a-f]{40}$`).MatchString(k) {
		t.Errorf("generated key %q is not e2b_ + 40 hex", k)
	}
}

func TestNew_PanicsOnKeyWithoutPrefix(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New accepted an API key without the e2b_ prefix")
		}
	}()
	fakeprovider.New(&fakeprovider.Options{APIKey: "nope"})
}

func TestProvider_UnknownRoutes(t *testing.T) {
	f := newFixture(t, nil)
	for _, tt := range []struct{ method, path string }{
		{"GET", "/nope"},
		{"PUT", "/sandboxes/abc"},
		{"GET", "/v2/sandboxes/extra"},
		{"PATCH", "/sandboxes/abc/pause"},
		{"GET", "/v3/sandboxes"},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			wantError(t, f.p, f.do(tt.method, tt.path, nil), 404, "Not Found")
		})
	}
	if got := f.p.Journal().Count(""); got != 5 {
		t.Errorf("journal has %d entries with op \"\", want 5", got)
	}
}

func TestProvider_Create(t *testing.T) {
	f := newFixture(t, nil)
	tests := []struct {
		name   string
		body   any
		status int
		msg    string
	}{
		{"bad JSON", `{"templateID":`, 400, "Error when parsing request: "},
		{"not an object", `[1]`, 400, "Error when parsing request: "},
		{"empty body", ``, 400, "Error when parsing request: EOF"},
		{"templateID missing", map[string]any{"timeout": 10}, 400, "validation error: "},
		{"unknown template", map[string]any{"templateID": "nope"}, 404, "template 'nope' not found"},
		{"timeout zero", map[string]any{"templateID": "base", "timeout": 0}, 400, "Timeout must be greater than 0"},
		{"timeout negative", map[string]any{"templateID": "base", "timeout": -5}, 400, "Timeout must be greater than 0"},
		{"timeout above max", map[string]any{"templateID": "base", "timeout": 86401}, 400, "Timeout cannot be greater than 24 hours"},
		{"timeout not an integer", map[string]any{"templateID": "base", "timeout": "10"}, 400, "Error when parsing request: "},
		{"cpuCount refused", map[string]any{"templateID": "base", "cpuCount": 4}, 400, "validation error: "},
		{"memoryMB refused", map[string]any{"templateID": "base", "memoryMB": 1024}, 400, "validation error: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, f.p, f.do("POST", "/sandboxes", tt.body), tt.status, tt.msg)
		})
	}
	if n := f.p.LiveCount(); n != 0 {
		t.Fatalf("rejected creates left %d sandboxes", n)
	}

	t.Run("defaults", func(t *testing.T) {
		sb := f.create(map[string]any{"templateID": "base", "metadata": map[string]string{"k": "v"}, "envVars": map[string]string{"A": "1"}, "autoPause": true})
		id, _ := sb["sandboxID"].(string)
		if !regexp.MustCompile(`^i[a-z0-9]{20}$`).MatchString(id) {
			t.Errorf("sandboxID %q is not i + 20 [a-z0-9]", id)
		}
		for k, want := range map[string]any{"templateID": "rki5dems9wqfm4r03t7g", "alias": "base", "envdVersion": "0.6.13"} {
			if sb[k] != want {
				t.Errorf("%s = %v, want %v", k, sb[k], want)
			}
		}
		if _, ok := sb["envdAccessToken"]; ok {
			t.Error("envdAccessToken present without secure")
		}
		// Canaries off: the platform's constant clientID and null domain
		// (e2b@2.51.0 index.d.ts Sandbox: domain?: string | null); the
		// traffic token, a secret, is a canary either way.
		if sb["clientID"] != fakeprovider.ClientID {
			t.Errorf("clientID = %v, want %q", sb["clientID"], fakeprovider.ClientID)
		}
		if d, ok := sb["domain"]; !ok || d != nil {
			t.Errorf("domain = %v (present %v), want null", d, ok)
		}
		if s, _ := sb["trafficAccessToken"].(string); !strings.Contains(s, "canary-") {
			t.Errorf("trafficAccessToken = %v, want a canary", sb["trafficAccessToken"])
		}
		rec, ok := f.p.Sandbox(id)
		if !ok {
			t.Fatal("created sandbox not live")
		}
		if !rec.StartedAt.Equal(t0) || !rec.EndAt.Equal(t0.Add(15*time.Second)) {
			t.Errorf("startedAt/endAt = %v/%v, want t0/t0+15s", rec.StartedAt, rec.EndAt)
		}
		if rec.Metadata["k"] != "v" || rec.EnvVars["A"] != "1" {
			t.Errorf("metadata/envVars not kept: %v %v", rec.Metadata, rec.EnvVars)
		}
		if rec.State != fakeprovider.StateRunning {
			t.Errorf("state %q", rec.State)
		}
	})
	t.Run("secure and template by ID", func(t *testing.T) {
		sb := f.create(map[string]any{"templateID": "nlhz8vlwyupq845jsdg9", "secure": true, "timeout": 86400})
		if tok, _ := sb["envdAccessToken"].(string); !strings.HasPrefix(tok, "canary-envd-") {
			t.Errorf("envdAccessToken = %v", sb["envdAccessToken"])
		}
		if sb["alias"] != "code-interpreter-v1" {
			t.Errorf("alias = %v", sb["alias"])
		}
		rec, _ := f.p.Sandbox(sb["sandboxID"].(string))
		if rec.CPUCount != 2 || rec.MemoryMB != 1024 || rec.DiskSizeMB != 1024 || !rec.EndAt.Equal(t0.Add(24*time.Hour)) {
			t.Errorf("record %+v", rec)
		}
	})
}

func TestProvider_TemplatesAndResources(t *testing.T) {
	templates := map[string]fakeprovider.Template{
		"small": {CPUCount: 1, MemoryMB: 256, DiskSizeMB: 1024},
		"big":   {ID: "bigtmpl01", CPUCount: 8, MemoryMB: 8192, DiskSizeMB: 20480, EnvdVersion: "0.5.7"},
	}
	t.Run("template defaults", func(t *testing.T) {
		f := newFixture(t, &fakeprovider.Options{Templates: templates})
		for _, tt := range []struct {
			template, wantID, wantAlias, wantEnvd string
			cpu, mem, disk                        float64
		}{
			{"small", "small", "", "0.6.13", 1, 256, 1024},
			{"big", "bigtmpl01", "big", "0.5.7", 8, 8192, 20480},
			{"bigtmpl01", "bigtmpl01", "big", "0.5.7", 8, 8192, 20480},
		} {
			sb := f.create(map[string]any{"templateID": tt.template})
			if sb["templateID"] != tt.wantID || sb["envdVersion"] != tt.wantEnvd {
				t.Errorf("%s: %v", tt.template, sb)
			}
			if a, _ := sb["alias"].(string); a != tt.wantAlias {
				t.Errorf("%s: alias %q, want %q", tt.template, a, tt.wantAlias)
			}
			d := decodeObject(t, f.do("GET", "/sandboxes/"+sb["sandboxID"].(string), nil).body)
			if d["cpuCount"] != tt.cpu || d["memoryMB"] != tt.mem || d["diskSizeMB"] != tt.disk {
				t.Errorf("%s: resources %v/%v/%v", tt.template, d["cpuCount"], d["memoryMB"], d["diskSizeMB"])
			}
		}
		wantError(t, f.p, f.do("POST", "/sandboxes", map[string]any{"templateID": "base"}), 404, "template 'base' not found")
	})
	t.Run("accept resources", func(t *testing.T) {
		f := newFixture(t, &fakeprovider.Options{AcceptResources: true})
		sb := f.create(map[string]any{"templateID": "base", "cpuCount": 4, "memoryMB": 2048})
		rec, _ := f.p.Sandbox(sb["sandboxID"].(string))
		if rec.CPUCount != 4 || rec.MemoryMB != 2048 || rec.DiskSizeMB != 512 {
			t.Errorf("resources %d/%d/%d, want 4/2048/512", rec.CPUCount, rec.MemoryMB, rec.DiskSizeMB)
		}
		wantError(t, f.p, f.do("POST", "/sandboxes", map[string]any{"templateID": "base", "cpuCount": 0}), 400, "validation error: ")
		wantError(t, f.p, f.do("POST", "/sandboxes", map[string]any{"templateID": "base", "memoryMB": 64}), 400, "validation error: ")
	})
}

func TestProvider_GetAndKill(t *testing.T) {
	ds := &daemons{}
	f := newFixture(t, &fakeprovider.Options{NewDaemon: ds.new})
	id := f.p.AddSandbox(fakeprovider.SandboxSeed{Metadata: map[string]string{"team": "a"}, Secure: true})

	d := decodeObject(t, f.do("GET", "/sandboxes/"+id, nil).body)
	for _, k := range []string{"templateID", "alias", "sandboxID", "clientID", "startedAt", "endAt", "cpuCount", "memoryMB", "diskSizeMB", "state", "envdVersion", "metadata", "envdAccessToken", "domain"} {
		if _, ok := d[k]; !ok {
			t.Errorf("detail lacks %q: %v", k, d)
		}
	}
	if d["state"] != "running" || d["startedAt"] != "2026-03-01T12:00:00Z" || d["endAt"] != "2026-03-01T12:05:00Z" {
		t.Errorf("detail %v", d)
	}
	if res := f.do("GET", "/sandboxes/"+id+"-6532622b", nil); res.status != 200 {
		t.Errorf("legacy <id>-<clientID> form: status %d", res.status)
	}
	for _, bad := range []string{"ABC", "a-b-c", "a_b", "e2b:" + id} {
		wantError(t, f.p, f.do("GET", "/sandboxes/"+bad, nil), 400, "Invalid sandbox ID")
		wantError(t, f.p, f.do("DELETE", "/sandboxes/"+bad, nil), 400, "Invalid sandbox ID")
	}
	wantError(t, f.p, f.do("GET", "/sandboxes/inope", nil), 404, `Sandbox "inope" doesn't exist or you don't have access to it`)

	res := f.do("DELETE", "/sandboxes/"+id, nil)
	if res.status != http.StatusNoContent || len(res.body) != 0 {
		t.Fatalf("kill: %d %q", res.status, res.body)
	}
	if !ds.get(id).isClosed() {
		t.Error("kill did not close the daemon")
	}
	wantError(t, f.p, f.do("GET", "/sandboxes/"+id, nil), 404, `Sandbox "`+id+`" doesn't exist`)
	wantError(t, f.p, f.do("DELETE", "/sandboxes/"+id, nil), 404, `Sandbox "`+id+`" doesn't exist`)

	paused := f.p.AddSandbox(fakeprovider.SandboxSeed{State: fakeprovider.StatePaused})
	if d := decodeObject(t, f.do("GET", "/sandboxes/"+paused, nil).body); d["state"] != "paused" || d["endAt"] != "2026-03-01T12:00:00Z" {
		t.Errorf("paused detail %v", d)
	}
	if res := f.do("DELETE", "/sandboxes/"+paused, nil); res.status != 204 {
		t.Errorf("kill paused: %d", res.status)
	}
	killing := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	f.p.SetState(killing, fakeprovider.StateKilling)
	wantError(t, f.p, f.do("GET", "/sandboxes/"+killing, nil), 404, "Sandbox")
	wantError(t, f.p, f.do("DELETE", "/sandboxes/"+killing, nil), 404, "Sandbox")
}

func TestProvider_OmittedFields(t *testing.T) {
	f := newFixture(t, nil)
	id := f.p.AddSandbox(fakeprovider.SandboxSeed{Omit: []string{"cpuCount", "memoryMB", "diskSizeMB"}})
	d := decodeObject(t, f.do("GET", "/sandboxes/"+id, nil).body)
	l := decodeList(t, f.do("GET", "/v2/sandboxes", nil).body)
	for _, k := range []string{"cpuCount", "memoryMB", "diskSizeMB"} {
		if _, ok := d[k]; ok {
			t.Errorf("get reports omitted %q", k)
		}
		if _, ok := l[0][k]; ok {
			t.Errorf("list reports omitted %q", k)
		}
	}
	if d["sandboxID"] != id {
		t.Errorf("detail %v", d)
	}
}

func TestProvider_SetTimeout(t *testing.T) {
	f := newFixture(t, &fakeprovider.Options{MaxLifetime: time.Hour})
	id := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	endAt := func() time.Time {
		rec, ok := f.p.Sandbox(id)
		if !ok {
			t.Fatal("sandbox gone")
		}
		return rec.EndAt
	}
	f.clock.Advance(time.Minute)
	steps := []struct {
		name string
		body any
		want time.Time
	}{
		{"extend", map[string]any{"timeout": 600}, t0.Add(11 * time.Minute)},
		{"shorten", map[string]any{"timeout": 30}, t0.Add(time.Minute + 30*time.Second)},
		{"clamped to max lifetime", map[string]any{"timeout": 86400}, t0.Add(time.Hour)},
		{"negative is zero", map[string]any{"timeout": -10}, t0.Add(time.Minute)},
	}
	for _, st := range steps {
		res := f.do("POST", "/sandboxes/"+id+"/timeout", st.body)
		if res.status != http.StatusNoContent {
			t.Fatalf("%s: status %d %s", st.name, res.status, res.body)
		}
		if got := endAt(); !got.Equal(st.want) {
			t.Errorf("%s: endAt %v, want %v", st.name, got, st.want)
		}
	}
	f.clock.Advance(time.Nanosecond)
	wantError(t, f.p, f.do("POST", "/sandboxes/"+id+"/timeout", map[string]any{"timeout": 60}), 404, `Sandbox "`+id+`" doesn't exist`)

	old := f.p.AddSandbox(fakeprovider.SandboxSeed{StartedAt: t0.Add(-2 * time.Hour), EndAt: t0.Add(2 * time.Hour)})
	paused := f.p.AddSandbox(fakeprovider.SandboxSeed{State: fakeprovider.StatePaused})
	live := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	tests := []struct {
		name   string
		id     string
		state  fakeprovider.State
		body   any
		status int
		msg    string
	}{
		{"past max lifetime", old, "", map[string]any{"timeout": 60}, 400, "Max instance length exceeded"},
		{"paused", paused, "", map[string]any{"timeout": 60}, 404, `Sandbox "` + paused + `" doesn't exist`},
		{"bad JSON", live, "", `{`, 400, "Error when parsing request: "},
		{"timeout missing", live, "", `{}`, 400, "validation error: "},
		{"invalid ID", "A-B-C", "", map[string]any{"timeout": 60}, 400, "Invalid sandbox ID"},
		{"pausing", live, fakeprovider.StatePausing, map[string]any{"timeout": 60}, 409, `Sandbox "` + live + `" is being paused`},
		{"snapshotting", live, fakeprovider.StateSnapshotting, map[string]any{"timeout": 60}, 409, `Sandbox "` + live + `" is being snapshotted`},
		{"killing", live, fakeprovider.StateKilling, map[string]any{"timeout": 60}, 409, `Sandbox "` + live + `" is being killed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.state != "" {
				f.p.SetState(tt.id, tt.state)
			}
			wantError(t, f.p, f.do("POST", "/sandboxes/"+tt.id+"/timeout", tt.body), tt.status, tt.msg)
		})
	}
}

func TestProvider_Connect(t *testing.T) {
	f := newFixture(t, nil)
	running := f.p.AddSandbox(fakeprovider.SandboxSeed{EndAt: t0.Add(10 * time.Minute)})

	res := f.do("POST", "/sandboxes/"+running+"/connect", map[string]any{"timeout": 60})
	if res.status != http.StatusOK {
		t.Fatalf("connect running: %d %s", res.status, res.body)
	}
	if sb := decodeObject(t, res.body); sb["sandboxID"] != running || sb["clientID"] != fakeprovider.ClientID {
		t.Errorf("connect body %v", sb)
	}
	if rec, _ := f.p.Sandbox(running); !rec.EndAt.Equal(t0.Add(10 * time.Minute)) {
		t.Errorf("connect shortened endAt to %v", rec.EndAt)
	}
	f.do("POST", "/sandboxes/"+running+"/connect", map[string]any{"timeout": 3600})
	if rec, _ := f.p.Sandbox(running); !rec.EndAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("connect did not extend endAt: %v", rec.EndAt)
	}

	paused := f.p.AddSandbox(fakeprovider.SandboxSeed{State: fakeprovider.StatePaused, StartedAt: t0.Add(-time.Hour)})
	f.clock.Advance(time.Minute)
	res = f.do("POST", "/sandboxes/"+paused+"/connect", map[string]any{"timeout": 120})
	if res.status != http.StatusCreated {
		t.Fatalf("connect paused: %d %s", res.status, res.body)
	}
	rec, _ := f.p.Sandbox(paused)
	now := t0.Add(time.Minute)
	if rec.State != fakeprovider.StateRunning || !rec.StartedAt.Equal(now) || !rec.EndAt.Equal(now.Add(2*time.Minute)) {
		t.Errorf("resumed record %+v", rec)
	}

	killing := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	f.p.SetState(killing, fakeprovider.StateKilling)
	pausing := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	f.p.SetState(pausing, fakeprovider.StatePausing)
	tests := []struct {
		name, id string
		body     any
		status   int
		msg      string
	}{
		{"timeout missing", running, `{}`, 400, "validation error: "},
		{"no body", running, nil, 400, "Error when parsing request: EOF"},
		{"timeout negative", running, map[string]any{"timeout": -1}, 400, "validation error: "},
		{"timeout above max", running, map[string]any{"timeout": 86401}, 400, "Timeout cannot be greater than 24 hours"},
		{"unknown", "inope", map[string]any{"timeout": 10}, 404, `Sandbox "inope" doesn't exist`},
		{"invalid ID", "a-b-c", map[string]any{"timeout": 10}, 400, "Invalid sandbox ID"},
		{"killing", killing, map[string]any{"timeout": 10}, 409, `Sandbox "` + killing + `" is being killed`},
		{"pausing", pausing, map[string]any{"timeout": 10}, 409, `Sandbox "` + pausing + `" is being paused`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, f.p, f.do("POST", "/sandboxes/"+tt.id+"/connect", tt.body), tt.status, tt.msg)
		})
	}
}

func TestProvider_Expiry(t *testing.T) {
	ds := &daemons{}
	f := newFixture(t, &fakeprovider.Options{NewDaemon: ds.new})
	sb := f.create(map[string]any{"templateID": "base", "timeout": 60})
	id := sb["sandboxID"].(string)
	paused := f.p.AddSandbox(fakeprovider.SandboxSeed{State: fakeprovider.StatePaused})

	f.clock.Advance(60 * time.Second) // now == endAt: still alive
	if res := f.do("GET", "/sandboxes/"+id, nil); res.status != 200 {
		t.Fatalf("at endAt: %d", res.status)
	}
	f.clock.Advance(time.Nanosecond)
	wantError(t, f.p, f.do("GET", "/sandboxes/"+id, nil), 404, `Sandbox "`+id+`" doesn't exist`)
	if !ds.get(id).isClosed() {
		t.Error("expired sandbox's daemon not closed")
	}
	for _, l := range decodeList(t, f.do("GET", "/v2/sandboxes", nil).body) {
		if l["sandboxID"] == id {
			t.Error("expired sandbox listed")
		}
	}
	f.clock.Advance(48 * time.Hour)
	if _, ok := f.p.Sandbox(paused); !ok {
		t.Error("paused sandbox expired")
	}
	if n := f.p.LiveCount(); n != 1 {
		t.Errorf("LiveCount = %d, want 1", n)
	}
}

func TestProvider_SandboxLimit(t *testing.T) {
	f := newFixture(t, &fakeprovider.Options{SandboxLimit: 2})
	a := f.create(map[string]any{"templateID": "base"})["sandboxID"].(string)
	f.create(map[string]any{"templateID": "base"})
	const msg = "you have reached the maximum number of concurrent E2B sandboxes (2). If you need more, please visit 'https://e2b.dev/docs/billing'"
	wantError(t, f.p, f.do("POST", "/sandboxes", map[string]any{"templateID": "base"}), 429, msg)

	paused := f.p.AddSandbox(fakeprovider.SandboxSeed{State: fakeprovider.StatePaused}) // seeds ignore the limit
	wantError(t, f.p, f.do("POST", "/sandboxes/"+paused+"/connect", map[string]any{"timeout": 10}), 429, msg)

	f.do("DELETE", "/sandboxes/"+a, nil)
	if res := f.do("POST", "/sandboxes/"+paused+"/connect", map[string]any{"timeout": 10}); res.status != 201 {
		t.Fatalf("resume after kill: %d %s", res.status, res.body)
	}
	wantError(t, f.p, f.do("POST", "/sandboxes", map[string]any{"templateID": "base"}), 429, msg)
}

func TestProvider_AddSandboxPanics(t *testing.T) {
	f := newFixture(t, nil)
	taken := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	tests := []struct {
		name string
		seed fakeprovider.SandboxSeed
	}{
		{"unknown template", fakeprovider.SandboxSeed{Template: "nope"}},
		{"unknown state", fakeprovider.SandboxSeed{State: "frozen"}},
		{"bad ID", fakeprovider.SandboxSeed{ID: "Not-Valid"}},
		{"duplicate ID", fakeprovider.SandboxSeed{ID: taken}},
		{"end before start", fakeprovider.SandboxSeed{StartedAt: t0, EndAt: t0.Add(-time.Second)}},
		{"unknown omitted field", fakeprovider.SandboxSeed{Omit: []string{"sandboxID"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("AddSandbox did not panic")
				}
			}()
			f.p.AddSandbox(tt.seed)
		})
	}
	t.Run("SetState on unknown sandbox", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Error("SetState did not panic")
			}
		}()
		f.p.SetState("inope", fakeprovider.StatePaused)
	})
	if n := f.p.LiveCount(); n != 1 {
		t.Errorf("LiveCount = %d after failed seeds, want 1", n)
	}
}

func TestProvider_SetStateAndEndAt(t *testing.T) {
	f := newFixture(t, nil)
	id := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	f.clock.Advance(time.Minute)
	f.p.SetState(id, fakeprovider.StatePaused)
	if rec, _ := f.p.Sandbox(id); rec.State != fakeprovider.StatePaused || !rec.EndAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("paused record %+v", rec)
	}
	f.p.SetState(id, fakeprovider.StateRunning)
	f.p.SetEndAt(id, t0.Add(time.Hour))
	f.clock.Advance(30 * time.Minute)
	if d := decodeObject(t, f.do("GET", "/sandboxes/"+id, nil).body); d["state"] != "running" || d["endAt"] != "2026-03-01T13:00:00Z" {
		t.Errorf("detail %v", d)
	}
	defer func() {
		if recover() == nil {
			t.Error("SetEndAt on an unknown sandbox did not panic")
		}
	}()
	f.p.SetEndAt("inope", t0)
}
