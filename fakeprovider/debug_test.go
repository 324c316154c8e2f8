package fakeprovider_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// debugSeam serves p on free loopback ports standing for e2b 1.x's debug
// addresses, so tests never contend for 3000, 49983 and 49999.
func debugSeam(t *testing.T, h http.Handler) *fakeprovider.DebugServers {
	t.Helper()
	d, err := fakeprovider.ListenDebug(h, fakeprovider.DebugAddrs{API: "127.0.0.1:0", Envd: "127.0.0.1:0", CodeInterpreter: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// debugGet sends what e2b 1.x sends in debug mode: no sandbox host, no
// E2b-Sandbox-Id.
func debugGet(t *testing.T, s *fakeprovider.Server, path string) (int, string) {
	t.Helper()
	res, err := http.Get(s.URL() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

// readAll reads and closes res's body.
func readAll(t *testing.T, res *http.Response) []byte {
	t.Helper()
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// eventLog collects DebugEvents.
type eventLog struct {
	mu     sync.Mutex
	events []fakeprovider.DebugEvent
}

func (l *eventLog) add(e fakeprovider.DebugEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) all() []fakeprovider.DebugEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]fakeprovider.DebugEvent(nil), l.events...)
}

// TestDebugPortsRouteByElimination checks the routing of requests on the
// debug sandbox ports: to the one running sandbox (envd and code
// interpreter alike), to a sandbox the fake starts when none runs, and to
// none, with a 502 and an event, when two run.
func TestDebugPortsRouteByElimination(t *testing.T) {
	var log eventLog
	p := fakeprovider.New(&fakeprovider.Options{OnDebugRoute: log.add})
	t.Cleanup(p.Close)
	d := debugSeam(t, p)

	// The API port is the control plane, as http://localhost:3000 is.
	req, _ := http.NewRequest(http.MethodPost, d.API.URL()+"/sandboxes", strings.NewReader(`{"templateID":"base","timeout":60}`))
	req.Header.Set("X-API-Key", p.APIKey())
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("create on the debug API port: %d", res.StatusCode)
	}
	live := p.LiveSandboxes()
	if len(live) != 1 {
		t.Fatalf("sandboxes after one create: %v", live)
	}
	a := live[0].ID

	for _, s := range []*fakeprovider.Server{d.Envd, d.CodeInterpreter} {
		p.Journal().Reset()
		if st, body := debugGet(t, s, "/health"); st >= 300 {
			t.Fatalf("GET /health on %s: %d %s", s.URL(), st, body)
		}
		es := p.Journal().ForSandbox(a)
		if len(es) != 1 || !es[0].Envd {
			t.Fatalf("GET /health on %s reached %v, want one envd entry for %s", s.URL(), p.Journal().Entries(), a)
		}
	}
	if ev := log.all(); len(ev) != 0 {
		t.Fatalf("events with one running sandbox: %v", ev)
	}
	// 1.x's connect in debug mode asks the API for its placeholder ID.
	req, _ = http.NewRequest(http.MethodGet, d.API.URL()+"/sandboxes/"+fakeprovider.DebugSandboxID, nil)
	req.Header.Set("X-API-Key", p.APIKey())
	if res, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	got := decodeObject(t, readAll(t, res))
	if res.StatusCode != http.StatusOK || got["sandboxID"] != a {
		t.Fatalf("GET /sandboxes/%s on the debug API: %d %v, want the running sandbox %s", fakeprovider.DebugSandboxID, res.StatusCode, got, a)
	}

	b := p.AddSandbox(fakeprovider.SandboxSeed{})
	st, body := debugGet(t, d.Envd, "/health")
	if st != http.StatusBadGateway || !strings.Contains(body, "2 sandboxes are running") {
		t.Fatalf("two sandboxes: %d %s, want 502 naming the ambiguity", st, body)
	}
	if ev := log.all(); len(ev) != 1 || !ev[0].Ambiguous || ev[0].Running != 2 || ev[0].Port != 49983 {
		t.Fatalf("events after an ambiguous request: %+v", ev)
	}

	p.SetState(a, fakeprovider.StateKilling)
	p.SetState(b, fakeprovider.StateKilling)
	if st, body := debugGet(t, d.Envd, "/health"); st >= 300 {
		t.Fatalf("no sandbox running: %d %s, want the fake to start one", st, body)
	}
	ev := log.all()
	if len(ev) != 2 || ev[1].Started == "" || ev[1].Started == a || ev[1].Started == b {
		t.Fatalf("events after a request with no sandbox running: %+v", ev)
	}
	if rec, ok := p.Sandbox(ev[1].Started); !ok || !rec.StartedForDebug {
		t.Fatalf("the started sandbox %s is not marked StartedForDebug: %+v", ev[1].Started, rec)
	}
	if rec, _ := p.Sandbox(b); rec.StartedForDebug {
		t.Fatalf("a seeded sandbox is marked StartedForDebug")
	}
	if len(p.Journal().ForSandbox(ev[1].Started)) == 0 {
		t.Fatalf("the request did not reach the started sandbox %s", ev[1].Started)
	}
}

// TestDebugAddrsAreE2B1x binds the real debug addresses e2b 1.x calls
// (localhost 3000, 49983, 49999), skipping when one is taken. It is the
// only test that binds them.
func TestDebugAddrsAreE2B1x(t *testing.T) {
	want := fakeprovider.DebugAddrs{API: "localhost:3000", Envd: "localhost:49983", CodeInterpreter: "localhost:49999"}
	if got := fakeprovider.DefaultDebugAddrs(); got != want {
		t.Fatalf("DefaultDebugAddrs() = %+v, want %+v", got, want)
	}
	p := fakeprovider.New(nil)
	t.Cleanup(p.Close)
	d, err := fakeprovider.ListenDebug(p, want)
	if errors.Is(err, syscall.EADDRINUSE) {
		t.Skipf("a debug port is taken on this machine: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	if st, body := debugGet(t, d.Envd, "/health"); st >= 300 {
		t.Fatalf("GET http://localhost:49983/health: %d %s", st, body)
	}
}
