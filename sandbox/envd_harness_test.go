package sandbox_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/internal/fakeenvd"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// Canary strings: none of them may ever appear in an error's text. The
// sandbox ID, the domain and the token are part of every daemon URL or
// request; the path shows up in the daemon's error messages.
const (
	canaryID     = "canarysbx9f2e"
	canaryDomain = "canary-domain-41b7.example"
	canaryToken  = "canary-token-0c9d5e"
	canaryDir    = "/tmp/canary-dir-6a3f"
)

var canaries = []string{canaryID, canaryDomain, canaryToken, "canary-dir-6a3f", "http://", "https://", "127.0.0.1", "49983-",
	"does not exist", "directory", "unauthorized", "not running", "disk space"}

// Modes of reaching the daemon.
const (
	modeSandboxURL  = "sandbox_url"  // E2B_SANDBOX_URL: one URL, E2b-Sandbox-Id/Port headers
	modeHostPattern = "host_pattern" // https://49983-<id>.<domain> routed to loopback
)

var modes = []string{modeSandboxURL, modeHostPattern}

// harness is a fake daemon behind a loopback server, a stub control plane
// that creates exactly one sandbox, and a handle on that sandbox obtained
// through the public Platform.Create.
type harness struct {
	daemon *fakeenvd.Daemon
	srv    *httptest.Server
	sb     *sandbox.Sandbox
	envd   *sandbox.Envd
	client *http.Client
}

// harnessOptions tweak a harness.
type harnessOptions struct {
	mode        string
	cfg         fakeenvd.Config
	clientToken *string             // the token the control plane hands out; default cfg.AccessToken
	observe     func(*http.Request) // when set, sees each request to the daemon first
}

func newHarness(t testing.TB, o harnessOptions) *harness {
	t.Helper()
	if o.mode == "" {
		o.mode = modeSandboxURL
	}
	if o.cfg.SandboxID == "" {
		o.cfg.SandboxID = canaryID
	}
	if o.cfg.AccessToken == "" {
		o.cfg.AccessToken = canaryToken
	}
	if o.cfg.Builtins == nil {
		o.cfg.Builtins = map[string]fakeenvd.Builtin{"emit": emitBuiltin}
	}
	token := o.cfg.AccessToken
	if o.clientToken != nil {
		token = *o.clientToken
	}
	d := fakeenvd.New(o.cfg)
	var handler http.Handler = d
	if o.observe != nil {
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			o.observe(r)
			d.ServeHTTP(w, r)
		})
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(func() {
		srv.Close()
		d.Close()
	})

	// The stub control plane: POST /sandboxes creates the one sandbox.
	cp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/sandboxes" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"sandboxID": o.cfg.SandboxID, "templateID": "base", "clientID": "c",
			"envdVersion": "0.5.7", "envdAccessToken": token, "domain": canaryDomain})
	}))
	t.Cleanup(cp.Close)

	srvURL, _ := url.Parse(srv.URL)
	cpURL, _ := url.Parse(cp.URL)
	env := map[string]string{sandbox.EnvAPIKey: "e2b_test", sandbox.EnvDomain: canaryDomain}
	rt := &router{base: srv.Client().Transport, routes: map[string]*url.URL{}}
	switch o.mode {
	case modeSandboxURL:
		env[sandbox.EnvAPIURL] = cp.URL
		env[sandbox.EnvSandboxURL] = srv.URL
	case modeHostPattern:
		env[sandbox.EnvAPIURL] = "https://api." + canaryDomain
		rt.routes["api."+canaryDomain] = cpURL
		rt.routes[strconv.Itoa(sandbox.EnvdPort)+"-"+o.cfg.SandboxID+"."+canaryDomain] = srvURL
	default:
		t.Fatalf("unknown mode %q", o.mode)
	}
	client := &http.Client{Transport: rt}
	p, err := sandbox.NewPlatform(&sandbox.Options{HTTPClient: client, Getenv: func(k string) string { return env[k] },
		RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := p.Create(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{daemon: d, srv: srv, sb: sb, envd: sb.Envd(nil), client: client}
}

// router sends requests for the listed host names to loopback servers,
// keeping the Host header as DNS and the platform's edge would; loopback
// URLs pass through; anything else fails.
type router struct {
	base   http.RoundTripper
	routes map[string]*url.URL
}

func (rt *router) RoundTrip(r *http.Request) (*http.Response, error) {
	if target, ok := rt.routes[r.URL.Host]; ok && r.URL.Scheme == "https" {
		r2 := r.Clone(r.Context())
		r2.URL.Scheme, r2.URL.Host, r2.Host = target.Scheme, target.Host, r.URL.Host
		return rt.base.RoundTrip(r2)
	}
	if strings.HasPrefix(r.URL.Host, "127.0.0.1:") {
		return rt.base.RoundTrip(r)
	}
	if r.Body != nil {
		_ = r.Body.Close()
	}
	return nil, fmt.Errorf("router: no route to %s", r.URL.Host)
}

// wantErr checks that err is a *sandbox.Error with op and category whose
// text holds no canary, and returns it.
func wantErr(t testing.TB, err error, op string, cat sandbox.Category) *sandbox.Error {
	t.Helper()
	var e *sandbox.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v (%T), want a *sandbox.Error", err, err)
	}
	if e.Op != op || e.Category != cat {
		t.Fatalf("got %q (op %q, category %s), want op %q, category %s", e.Error(), e.Op, e.Category, op, cat)
	}
	noLeak(t, err)
	return e
}

// noLeak fails when err's text holds a canary.
func noLeak(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	msg := err.Error()
	for _, c := range canaries {
		if strings.Contains(msg, c) {
			t.Errorf("error text %q contains %q", msg, c)
		}
	}
}

// pattern is the deterministic content of stream s (0 stdout, 1 stderr)
// at offset i: every byte value occurs, and none of it is valid text.
func pattern(s int, i int64) byte { return byte(i*7 + int64(s)*13 + i/251) }

// fillPattern writes pattern(s, off...) into p.
func fillPattern(p []byte, s int, off int64) {
	for j := range p {
		p[j] = pattern(s, off+int64(j))
	}
}

// patternHash is the SHA-256 of the first n bytes of stream s.
func patternHash(s int, n int64) [32]byte {
	h := sha256.New()
	buf := make([]byte, 64<<10)
	for off := int64(0); off < n; {
		k := min(int64(len(buf)), n-off)
		fillPattern(buf[:k], s, off)
		h.Write(buf[:k])
		off += k
	}
	return sum(h)
}

func sum(h hash.Hash) [32]byte {
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// emitBuiltin is a test command of the fake sandbox: "emit OUT ERR [CHUNK]"
// writes OUT bytes of pattern 0 to stdout and ERR bytes of pattern 1 to
// stderr, interleaved in CHUNK-byte writes (default 4096).
func emitBuiltin(ctx context.Context, inv *fakeenvd.Invocation) int {
	if len(inv.Args) < 3 {
		return inv.Errorf("usage: emit OUT ERR [CHUNK]")
	}
	nOut, err1 := strconv.ParseInt(inv.Args[1], 10, 64)
	nErr, err2 := strconv.ParseInt(inv.Args[2], 10, 64)
	chunk := int64(4096)
	if len(inv.Args) > 3 {
		chunk, _ = strconv.ParseInt(inv.Args[3], 10, 64)
	}
	if err1 != nil || err2 != nil || chunk <= 0 {
		return inv.Errorf("bad arguments")
	}
	buf := make([]byte, chunk)
	var off [2]int64
	total := [2]int64{nOut, nErr}
	w := [2]io.Writer{inv.Stdout, inv.Stderr}
	for off[0] < total[0] || off[1] < total[1] {
		for s := range 2 {
			if off[s] >= total[s] {
				continue
			}
			if ctx.Err() != nil {
				return 130
			}
			k := min(chunk, total[s]-off[s])
			fillPattern(buf[:k], s, off[s])
			if _, err := w[s].Write(buf[:k]); err != nil {
				return 1
			}
			off[s] += k
		}
	}
	return 0
}
