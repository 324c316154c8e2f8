package fakeprovider_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// t0 is the fake clock's start in every test.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// apiBase is the control-plane base URL used in-process.
const apiBase = "https://api.sandboxkit.test"

// fixture is a Provider on a fake clock plus an in-process client.
type fixture struct {
	t     *testing.T
	p     *fakeprovider.Provider
	clock *fakeprovider.FakeClock
	hc    *http.Client
	base  string
}

// newFixture builds a Provider with opts (Clock is always a FakeClock at t0).
func newFixture(t *testing.T, opts *fakeprovider.Options) *fixture {
	t.Helper()
	if opts == nil {
		opts = &fakeprovider.Options{}
	}
	clock := fakeprovider.NewFakeClock(t0)
	opts.Clock = clock
	p := fakeprovider.New(opts)
	t.Cleanup(p.Close)
	return &fixture{t: t, p: p, clock: clock, hc: p.HTTPClient(), base: apiBase}
}

// response is a fully read response.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends a control-plane request with the fake's API key. body is sent
// as is when it is a string, else as JSON (nil: no body).
func (f *fixture) do(method, path string, body any) response {
	f.t.Helper()
	return f.doWith(method, path, body, map[string]string{"X-API-Key": f.p.APIKey()})
}

// doWith sends a request with exactly the given headers.
func (f *fixture) doWith(method, path string, body any, headers map[string]string) response {
	f.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		js, err := json.Marshal(b)
		if err != nil {
			f.t.Fatal(err)
		}
		rd = bytes.NewReader(js)
	}
	url := path
	if !strings.HasPrefix(path, "http") {
		url = f.base + path
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	for k, v := range headers {
		if strings.EqualFold(k, "host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := f.hc.Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		f.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// create creates a sandbox and returns its decoded Sandbox body.
func (f *fixture) create(body map[string]any) map[string]any {
	f.t.Helper()
	res := f.do("POST", "/sandboxes", body)
	if res.status != http.StatusCreated {
		f.t.Fatalf("create: status %d, body %s", res.status, res.body)
	}
	return decodeObject(f.t, res.body)
}

// decodeObject decodes a JSON object.
func decodeObject(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return m
}

// decodeList decodes a JSON array of objects.
func decodeList(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var l []map[string]any
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return l
}

// wantError checks that res is an E2B error with status and a message that
// starts with prefix; with canaries on it must carry a canary and a URL the
// Provider issued, with canaries off no canary at all.
func wantError(t *testing.T, p *fakeprovider.Provider, res response, status int, prefix string) {
	t.Helper()
	if res.status != status {
		t.Fatalf("status = %d, want %d (body %s)", res.status, status, res.body)
	}
	var e struct {
		Code    *int    `json:"code"`
		Message *string `json:"message"`
	}
	dec := json.NewDecoder(bytes.NewReader(res.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil || e.Code == nil || e.Message == nil {
		t.Fatalf("error body %s is not {code, message}: %v", res.body, err)
	}
	if *e.Code != status {
		t.Errorf("code = %d, want %d", *e.Code, status)
	}
	if !strings.HasPrefix(*e.Message, prefix) {
		t.Errorf("message = %q, want prefix %q", *e.Message, prefix)
	}
	if !p.CanaryMode() {
		if strings.Contains(*e.Message, "canary-") || strings.Contains(*e.Message, "https://api.") {
			t.Errorf("message %q carries a canary or URL although canaries are off", *e.Message)
		}
		return
	}
	if !strings.Contains(*e.Message, "https://api.canary-err-") {
		t.Errorf("message %q carries no URL", *e.Message)
	}
	if c, ok := p.FindCanary(*e.Message); !ok || !strings.HasPrefix(c, "canary-err-") {
		t.Errorf("message %q carries no issued error canary", *e.Message)
	}
}

// stubDaemon is a Daemon whose handler a test supplies.
type stubDaemon struct {
	cfg     fakeprovider.DaemonConfig
	handler http.HandlerFunc

	mu     sync.Mutex
	closed bool
	seen   []string // "METHOD /path" of each request
}

func (d *stubDaemon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	d.seen = append(d.seen, r.Method+" "+r.URL.Path)
	d.mu.Unlock()
	if d.handler != nil {
		d.handler(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"daemon":"`+d.cfg.SandboxID+`"}`)
}

func (d *stubDaemon) Close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
}

func (d *stubDaemon) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

func (d *stubDaemon) requests() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.seen...)
}

// daemons records the stub daemons a Provider builds, by sandbox ID.
type daemons struct {
	handler http.HandlerFunc

	mu   sync.Mutex
	byID map[string]*stubDaemon
}

func (ds *daemons) new(cfg fakeprovider.DaemonConfig) fakeprovider.Daemon {
	d := &stubDaemon{cfg: cfg, handler: ds.handler}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.byID == nil {
		ds.byID = make(map[string]*stubDaemon)
	}
	ds.byID[cfg.SandboxID] = d
	return d
}

func (ds *daemons) get(id string) *stubDaemon {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	return ds.byID[id]
}
