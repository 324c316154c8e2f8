package fakeprovider_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/internal/envdapi"
	"github.com/sandboxkit/sandboxkit/internal/fakeenvd"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

func TestProvider_EnvdRouting(t *testing.T) {
	ds := &daemons{}
	f := newFixture(t, &fakeprovider.Options{NewDaemon: ds.new, Canaries: true})
	running := f.p.AddSandbox(fakeprovider.SandboxSeed{Secure: true})
	paused := f.p.AddSandbox(fakeprovider.SandboxSeed{State: fakeprovider.StatePaused})
	expiring := f.p.AddSandbox(fakeprovider.SandboxSeed{EndAt: t0.Add(time.Minute)})
	killed := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	f.do("DELETE", "/sandboxes/"+killed, nil)
	f.clock.Advance(2 * time.Minute)
	domain, _ := f.p.Domain(running)

	byHost := func(id string) map[string]string { return map[string]string{"Host": "49983-" + id + "." + domain} }
	byHeader := func(id string) map[string]string { return map[string]string{"E2b-Sandbox-Id": id} }
	tests := []struct {
		name    string
		method  string
		path    string
		headers map[string]string
		status  int
		msg     string
	}{
		{"host", "GET", "/health", byHost(running), 200, ""},
		{"host with any domain", "POST", "/filesystem.Filesystem/Stat", map[string]string{"Host": "49983-" + running + ".e2b.app"}, 200, ""},
		{"header", "POST", "/process.Process/Start", byHeader(running), 200, ""},
		{"header with port", "GET", "/files", map[string]string{"E2b-Sandbox-Id": running, "E2b-Sandbox-Port": "49983"}, 200, ""},
		{"path outside the table", "GET", "/envs", byHeader(running), 200, ""},
		{"unknown sandbox", "GET", "/health", byHeader("inope"), 502, "The sandbox was not found"},
		{"unknown sandbox by host", "GET", "/health", byHost("inope"), 502, "The sandbox was not found"},
		{"paused", "GET", "/health", byHeader(paused), 502, "The sandbox was not found"},
		{"expired", "GET", "/health", byHost(expiring), 502, "The sandbox was not found"},
		{"killed", "GET", "/health", byHeader(killed), 502, "The sandbox was not found"},
		{"other port", "GET", "/", map[string]string{"Host": "8080-" + running + "." + domain}, 502, "The sandbox is running but port is not open"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.doWith(tt.method, "https://ignored.example"+tt.path, nil, tt.headers)
			if tt.status == 200 {
				if res.status != 200 || string(res.body) != `{"daemon":"`+running+`"}` {
					t.Errorf("%d %s", res.status, res.body)
				}
				return
			}
			id := tt.headers["E2b-Sandbox-Id"]
			if id == "" {
				id = strings.TrimPrefix(strings.SplitN(tt.headers["Host"], ".", 2)[0], "49983-")
				id = strings.TrimPrefix(id, "8080-")
			}
			port := uint64(0)
			if tt.name == "other port" {
				port = 8080
			}
			wantEdgeError(t, f.p, res, id, tt.msg, port)
		})
	}
	if got, want := ds.get(running).requests(), []string{
		"GET /health", "POST /filesystem.Filesystem/Stat", "POST /process.Process/Start", "GET /files", "GET /envs",
	}; !slices.Equal(got, want) {
		t.Errorf("daemon saw %q, want %q", got, want)
	}
	if !ds.get(expiring).isClosed() || !ds.get(killed).isClosed() || ds.get(running).isClosed() || ds.get(paused).isClosed() {
		t.Error("daemons closed wrongly")
	}
	if cfg := ds.get(running).cfg; !strings.HasPrefix(cfg.AccessToken, "canary-envd-") || ds.get(paused).cfg.AccessToken != "" {
		t.Errorf("access tokens %q / %q", cfg.AccessToken, ds.get(paused).cfg.AccessToken)
	}

	j := f.p.Journal()
	if n := j.Count(sandbox.OpEnvdHealth); n != 6 {
		t.Errorf("journal counts %d health calls, want 6", n)
	}
	for _, e := range j.ForSandbox(running) {
		if !e.Envd && e.Op != sandbox.OpKillSandbox {
			t.Errorf("entry %q for %s not marked envd", e.Op, running)
		}
	}
	if e := j.Calls(sandbox.OpProcessStart); len(e) != 1 || e[0].SandboxID != running {
		t.Errorf("Start entries %+v", e)
	}
	if e := j.Calls(""); len(e) != 2 || e[0].Path != "/envs" {
		t.Errorf("unnamed envd entries %+v", e)
	}

	// Faults reach envd operations by name and sandbox.
	f.p.InjectFault(fakeprovider.Fault{Op: sandbox.OpEnvdHealth, SandboxID: running, Status: 503, Times: 1})
	wantError(t, f.p, f.doWith("GET", "https://x/health", nil, byHeader(running)), 503, "Service Unavailable")
	if res := f.doWith("GET", "https://x/health", nil, byHeader(running)); res.status != 200 {
		t.Errorf("after the fault: %d", res.status)
	}
}

func TestProvider_EnvdWithoutDaemon(t *testing.T) {
	f := newFixture(t, &fakeprovider.Options{NoDaemon: true})
	id := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	if rec, _ := f.p.Sandbox(id); rec.HasDaemon {
		t.Error("sandbox has a daemon with NoDaemon")
	}
	wantEdgeError(t, f.p, f.doWith("GET", "https://x/health", nil, map[string]string{"E2b-Sandbox-Id": id}), id, "The sandbox is running but port is not open", 49983)
}

// wantEdgeError checks the platform edge's 502 body (e2b-dev/infra
// packages/shared/pkg/proxy/template/sandbox_not_found.go, port_closed.go):
// {sandboxId, message, code} (+ port), the message carrying an issued canary
// in canary mode and the platform's text alone otherwise.
func wantEdgeError(t *testing.T, p *fakeprovider.Provider, res response, id, prefix string, port uint64) {
	t.Helper()
	if res.status != http.StatusBadGateway {
		t.Fatalf("status = %d, want 502 (body %s)", res.status, res.body)
	}
	var e struct {
		SandboxID string `json:"sandboxId"`
		Message   string `json:"message"`
		Port      uint64 `json:"port"`
		Code      int    `json:"code"`
	}
	dec := json.NewDecoder(bytes.NewReader(res.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("edge body %s: %v", res.body, err)
	}
	if e.SandboxID != id || e.Code != 502 || e.Port != port || !strings.HasPrefix(e.Message, prefix) {
		t.Errorf("edge body %+v, want sandboxId %q, code 502, port %d, message %q…", e, id, port, prefix)
	}
	c, found := p.FindCanary(e.Message)
	switch {
	case p.CanaryMode() && (!found || !strings.HasPrefix(c, "canary-err-")):
		t.Errorf("message %q carries no issued error canary", e.Message)
	case !p.CanaryMode() && e.Message != prefix:
		t.Errorf("message %q, want the platform's text %q alone (canaries off)", e.Message, prefix)
	}
}

// TestProvider_EnvdSignedURLWithoutSandbox: e2b@2.51.0 puts signed /files
// URLs on the shared E2B_SANDBOX_URL with no sandbox header or host
// (index.mjs:5825 fileUrl, 1384 getSandboxDirectUrl); the signature, over
// path, operation, user and the sandbox's access token (index.mjs:1427-1438),
// names the sandbox.
func TestProvider_EnvdSignedURLWithoutSandbox(t *testing.T) {
	f := newFixture(t, nil)
	a := f.p.AddSandbox(fakeprovider.SandboxSeed{Secure: true})
	b := f.p.AddSandbox(fakeprovider.SandboxSeed{Secure: true})
	rb, _ := f.p.Sandbox(b)
	exp := t0.Unix() + 3600
	if exp < time.Now().Unix() {
		exp = time.Now().Unix() + 3600
	}
	sig := envdapi.FileSignature("/etc/hostname", envdapi.SignRead, "", rb.EnvdAccessToken, &exp)
	q := url.Values{"path": {"/etc/hostname"}, "signature": {sig}, "signature_expiration": {strconv.FormatInt(exp, 10)}}
	if res := f.doWith("GET", "/files?"+q.Encode(), nil, nil); res.status != 200 || !strings.HasPrefix(string(res.body), fakeenvd.Hostname) {
		t.Fatalf("signed download: %d %s", res.status, res.body)
	}
	if n := len(f.p.Journal().ForSandbox(b)); n != 1 {
		t.Errorf("%d journal entries for the signing sandbox, want 1", n)
	}
	if n := len(f.p.Journal().ForSandbox(a)); n != 0 {
		t.Errorf("%d journal entries for the other sandbox", n)
	}
	// A signature no sandbox made (here: a read signed as a write) reaches
	// no sandbox: the shared URL's own answer, 404.
	q.Set("signature", envdapi.FileSignature("/etc/hostname", envdapi.SignWrite, "", rb.EnvdAccessToken, &exp))
	if res := f.doWith("GET", "/files?"+q.Encode(), nil, nil); res.status != 404 {
		t.Errorf("foreign signature: %d %s", res.status, res.body)
	}
}
