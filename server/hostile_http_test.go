package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/internal/syncbuf"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// rpcErrorOf parses a JSON-RPC error answer.
func rpcErrorOf(t *testing.T, body []byte) (id any, code int) {
	t.Helper()
	var m struct {
		ID    any `json:"id"`
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &m); err != nil || m.Error == nil {
		t.Fatalf("not a JSON-RPC error: %s", body)
	}
	return m.ID, m.Error.Code
}

// TestHTTPStrictMessages: duplicate member names, fractional or
// structured ids and data after the value are refused before dispatch,
// with a JSON-RPC error; the session goes on.
func TestHTTPStrictMessages(t *testing.T) {
	h := newHarness(t, nil)
	ts := serveHTTP(t, h, nil)
	hc := httpClient(t, nil)
	id := rawSession(t, hc, ts.URL)
	created := h.fp.Journal().Count(sandbox.OpCreateSandbox)
	for _, tc := range []struct {
		name, body string
		code       int
		id         any
	}{
		{"duplicate tool name", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_sandboxes","name":"create_sandbox","arguments":{}}}`, -32600, nil},
		{"duplicate nested", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"create_sandbox","arguments":{"timeout":60,"timeout":61}}}`, -32600, nil},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, -32600, nil},
		{"object id", `{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, -32600, nil},
		{"trailing object", `{"jsonrpc":"2.0","id":4,"method":"ping"}{"jsonrpc":"2.0","id":5,"method":"ping"}`, -32700, nil},
		{"trailing garbage", `{"jsonrpc":"2.0","id":6,"method":"ping"} x`, -32700, nil},
		{"version 1.0", `{"jsonrpc":"1.0","id":7,"method":"ping"}`, -32600, 7.0},
		{"batch", `[{"jsonrpc":"2.0","id":8,"method":"ping"}]`, -32600, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := rawPost(t, hc, ts.URL, id, strings.NewReader(tc.body), nil)
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("status %d, want 400: %s", resp.StatusCode, body)
			}
			gotID, code := rpcErrorOf(t, body)
			if code != tc.code || gotID != tc.id {
				t.Errorf("answer %s, want code %d id %v", body, tc.code, tc.id)
			}
		})
	}
	if n := h.fp.Journal().Count(sandbox.OpCreateSandbox); n != created {
		t.Errorf("a refused message reached the provider (%d creates)", n-created)
	}
	resp, body := rawPost(t, hc, ts.URL, id, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"ping"}`), nil)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"id":9,"result"`)) {
		t.Errorf("session unusable after the refusals: %d %s", resp.StatusCode, body)
	}
	rawDelete(t, hc, ts.URL, id)
}

// TestHTTPEnvelopeLimit: a message other than tools/call, or a tools/call
// whose envelope (all but its arguments) is large, is refused with 413
// and a JSON-RPC error; a tools/call with large arguments is not.
func TestHTTPEnvelopeLimit(t *testing.T) {
	h := newHarness(t, nil)
	ts := serveHTTP(t, h, &HTTPOptions{MaxEnvelopeBytes: 8 << 10})
	hc := httpClient(t, nil)
	id := rawSession(t, hc, ts.URL)
	pad := strings.Repeat("a", 16<<10)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":{"pad":"` + pad + `"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_sandboxes","arguments":{},"_meta":{"pad":"` + pad + `"}}}`,
	} {
		resp, data := rawPost(t, hc, ts.URL, id, strings.NewReader(body), nil)
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("status %d, want 413: %.200s", resp.StatusCode, data)
		}
		rpcErrorOf(t, data)
	}
	call := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/tmp/a","content":"` + pad + `"}}}`
	resp, data := rawPost(t, hc, ts.URL, id, strings.NewReader(call), nil)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(data, []byte(`\"bytes_written\":16384`)) {
		t.Errorf("large arguments: %d %.300s", resp.StatusCode, data)
	}
	rawDelete(t, hc, ts.URL, id)
}

// TestIdleSessionsKeepNoArguments: sessions that each sent one large
// tools/call and then went idle keep nothing of it. The SDK (go-sdk
// v1.8.0) keeps an idle session's last request; the front end hands it
// the request without the large arguments. Without that, 16 sessions with
// 2 MiB arguments pin 32 MiB of heap.
func TestIdleSessionsKeepNoArguments(t *testing.T) {
	h := newHarness(t, nil)
	ts := serveHTTP(t, h, nil)
	hc := httpClient(t, nil)
	const sessions, size = 16, 2 << 20
	content := strings.Repeat("b", size)
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var ids []string
	before := heap()
	for i := range sessions {
		id := rawSession(t, hc, ts.URL)
		ids = append(ids, id)
		// A call the tool refuses before any platform call (an unknown
		// argument), so that nothing is stored in a sandbox: what is
		// measured is what the session keeps afterwards.
		call := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/tmp/f%d","content":"%s","x":1}}}`, i, content)
		resp, body := rawPost(t, hc, ts.URL, id, strings.NewReader(call), nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("call: %d %.200s", resp.StatusCode, body)
		}
	}
	grown := int64(heap()) - int64(before)
	t.Logf("heap growth with %d idle sessions after a %d MiB call each: %.1f MiB", sessions, size>>20, float64(grown)/(1<<20))
	if grown > sessions*size/4 {
		t.Errorf("idle sessions hold %.1f MiB: their last requests' arguments are pinned", float64(grown)/(1<<20))
	}
	for _, id := range ids {
		rawDelete(t, hc, ts.URL, id)
	}
}

// TestInFlightBudget: a large request that finds the byte budget full
// waits, then is refused with 503 and Retry-After; small requests go
// through meanwhile, and once the budget frees a large one is served.
func TestInFlightBudget(t *testing.T) {
	h := newHarness(t, nil)
	ts := serveHTTP(t, h, &HTTPOptions{MaxRequestBodyBytes: 1 << 20, MaxInFlightBytes: 1 << 20, InFlightWait: 200 * time.Millisecond})
	hc := httpClient(t, nil)
	id := rawSession(t, hc, ts.URL)
	// Hold the whole budget with a body that is declared but not sent.
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n{",
		MCPPath, strings.TrimPrefix(ts.URL, "http://"), id, 1<<20)
	big := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/tmp/a","content":"` + strings.Repeat("c", 100<<10) + `"}}}`
	// Once the held body has reached the server (no sleep decides when),
	// a large request is refused; before that it is served.
	var resp *http.Response
	var body []byte
	waitFor(t, "a large request refused while the budget is held", func() bool {
		resp, body = rawPost(t, hc, ts.URL, id, strings.NewReader(big), nil)
		return resp.StatusCode != http.StatusOK
	})
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("status %d (Retry-After %q), want 503 with Retry-After: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	resp, body = rawPost(t, hc, ts.URL, id, strings.NewReader(`{"jsonrpc":"2.0","id":4,"method":"ping"}`), nil)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("small request while the budget is full: %d %s", resp.StatusCode, body)
	}
	// A reader of unknown length is sent chunked: small, it needs no room.
	resp, body = rawPost(t, hc, ts.URL, id, io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)), nil)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("small chunked request while the budget is full: %d %s", resp.StatusCode, body)
	}
	conn.Close()
	waitFor(t, "the large request is served once the budget frees", func() bool {
		resp, _ := rawPost(t, hc, ts.URL, id, strings.NewReader(big), nil)
		return resp.StatusCode == http.StatusOK
	})
	rawDelete(t, hc, ts.URL, id)
}

// TestSessionCapDefaultsAndKeys: the per-client cap is on by default, and
// clients are keyed by IPv4 address, by IPv6 /64, or by the trusted header.
func TestSessionCapDefaultsAndKeys(t *testing.T) {
	if got := (*HTTPOptions)(nil).withDefaults(Limits{}).MaxSessionsPerClient; got != DefaultMaxSessionsPerClient {
		t.Errorf("default per-client cap %d, want %d", got, DefaultMaxSessionsPerClient)
	}
	for _, tc := range []struct {
		remote, header, value, want string
	}{
		{"192.0.2.1:5000", "", "", "192.0.2.1"},
		{"[2001:db8:1:2:3:4:5:6]:5000", "", "", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:5000", "", "", "2001:db8:1:2::/64"},
		{"[::ffff:192.0.2.9]:5000", "", "", "192.0.2.9"},
		{"127.0.0.1:5000", "X-Forwarded-For", "198.51.100.7, 203.0.113.5", "203.0.113.5"},
		{"127.0.0.1:5000", "X-Real-Ip", "2001:db8:9:9::1", "2001:db8:9:9::/64"},
		{"127.0.0.1:5000", "X-Forwarded-For", "not an address", "127.0.0.1"},
		{"127.0.0.1:5000", "X-Forwarded-For", "", "127.0.0.1"},
	} {
		r := httptest.NewRequest(http.MethodPost, MCPPath, nil)
		r.RemoteAddr = tc.remote
		if tc.value != "" {
			r.Header.Set(tc.header, tc.value)
		}
		if got := clientKey(r, tc.header); got != tc.want {
			t.Errorf("clientKey(%s, %s=%q) = %q, want %q", tc.remote, tc.header, tc.value, got, tc.want)
		}
	}
}

// TestTrustedClientHeader: behind a proxy, each client named by the
// trusted header has its own cap.
func TestTrustedClientHeader(t *testing.T) {
	h := newHarness(t, nil)
	ts := serveHTTP(t, h, &HTTPOptions{MaxSessionsPerClient: 1, ClientIPHeader: "X-Forwarded-For"})
	hc := httpClient(t, nil)
	open := func(client string) (*http.Response, []byte) {
		return rawPost(t, hc, ts.URL, "", strings.NewReader(initializeBody), http.Header{"X-Forwarded-For": {client}})
	}
	a, _ := open("198.51.100.1")
	b, _ := open("198.51.100.2")
	a2, _ := open("198.51.100.1")
	if a.StatusCode != http.StatusOK || b.StatusCode != http.StatusOK || a2.StatusCode != http.StatusTooManyRequests {
		t.Errorf("statuses %d %d %d, want 200 200 429", a.StatusCode, b.StatusCode, a2.StatusCode)
	}
	rawDelete(t, hc, ts.URL, a.Header.Get("Mcp-Session-Id"))
	rawDelete(t, hc, ts.URL, b.Header.Get("Mcp-Session-Id"))
}

// TestEvictIdleWhenFull: at the server's cap, the session idle the
// longest is closed (its sandboxes destroyed) to admit a new one, and the
// others stay. The server's clock is fake: the test moves it between the
// sessions' last requests, so which one idled longest does not depend on
// how fast this machine is.
func TestEvictIdleWhenFull(t *testing.T) {
	clock := fakeprovider.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	h := newHarness(t, &harnessOptions{now: clock.Now})
	ts := serveHTTP(t, h, &HTTPOptions{MaxSessions: 2, MaxSessionsPerClient: -1, EvictIdle: 50 * time.Millisecond})
	hc := httpClient(t, nil)
	old := rawSession(t, hc, ts.URL)
	resp, body := rawPost(t, hc, ts.URL, old, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"create_sandbox","arguments":{}}}`), nil)
	if resp.StatusCode != http.StatusOK || bytes.Contains(body, []byte(`isError`)) {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	clock.Advance(20 * time.Millisecond)
	newer := rawSession(t, hc, ts.URL)
	clock.Advance(60 * time.Millisecond) // both idle past EvictIdle now
	third := rawSession(t, hc, ts.URL)
	waitFor(t, "the longest idle session's sandbox destroyed", func() bool { return h.fp.LiveCount() == 0 })
	resp, _ = rawPost(t, hc, ts.URL, old, strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"ping"}`), nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("evicted session answered %d, want 404", resp.StatusCode)
	}
	resp, _ = rawPost(t, hc, ts.URL, newer, strings.NewReader(`{"jsonrpc":"2.0","id":4,"method":"ping"}`), nil)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the newer session was evicted too: %d", resp.StatusCode)
	}
	rawDelete(t, hc, ts.URL, newer)
	rawDelete(t, hc, ts.URL, third)
}

// TestSlowBodyHoldsNoSlot: a connection that never finishes its body does
// not count against its client's cap.
func TestSlowBodyHoldsNoSlot(t *testing.T) {
	h := newHarness(t, nil)
	ts := serveHTTP(t, h, &HTTPOptions{MaxSessionsPerClient: 1})
	hc := httpClient(t, nil)
	var conns []net.Conn
	for range 3 {
		conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, conn)
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n{",
			MCPPath, strings.TrimPrefix(ts.URL, "http://"), len(initializeBody))
	}
	time.Sleep(100 * time.Millisecond)
	id := rawSession(t, hc, ts.URL)
	rawDelete(t, hc, ts.URL, id)
	for _, c := range conns {
		c.Close()
	}
}

// TestShutdownAnswersCallsInFlight: a call in flight when shutdown starts
// gets a JSON-RPC answer, not an empty 200.
func TestShutdownAnswersCallsInFlight(t *testing.T) {
	h := newHarness(t, nil)
	ts := httptest.NewServer(h.srv.HTTPHandler(nil))
	defer ts.Close()
	hc := httpClient(t, nil)
	id := rawSession(t, hc, ts.URL)
	fh := h.fp.InjectFault(fakeprovider.Fault{Op: sandbox.OpListSandboxes, Hang: true})
	defer fh.Release()
	var wg sync.WaitGroup
	var status int
	var body []byte
	wg.Go(func() {
		resp, b := rawPost(t, hc, ts.URL, id, strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"list_sandboxes","arguments":{}}}`), nil)
		status, body = resp.StatusCode, b
	})
	waitFor(t, "the call reached the provider", func() bool { return h.fp.Journal().Count(sandbox.OpListSandboxes) > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	wg.Wait()
	if status != http.StatusOK || !bytes.Contains(body, []byte(`"id":5`)) {
		t.Errorf("call in flight at shutdown got %d %q, want its JSON-RPC answer", status, body)
	}
}

// TestRefusedConnectionIsNoLostCreate: a create whose connection was
// refused reached no provider: no "destroy it by hand" alarm, nothing
// unresolved.
func TestRefusedConnectionIsNoLostCreate(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	env := map[string]string{sandbox.EnvAPIKey: "e2b_test", "E2B_API_URL": "http://" + addr, "E2B_DOMAIN": "localhost"}
	p, err := sandbox.NewPlatform(&sandbox.Options{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	var logs syncbuf.Buffer
	srv, err := New(&Deps{Platform: p, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Limits: Limits{DestroyRetryFor: 300 * time.Millisecond}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := stdioInit + "\n" + stdioInitialized + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"create_sandbox","arguments":{}}}` + "\n"
	var out syncbuf.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Run(ctx, &lineTransport{r: strings.NewReader(in), w: &out, maxLine: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"isError":true`) {
		t.Errorf("create against a closed port: %s", out.String())
	}
	if strings.Contains(logs.String(), "by hand") || srv.UnresolvedCount() != 0 {
		t.Errorf("false alarm for a create that reached nothing:\n%s", logs.String())
	}
}

// TestUnresolvedBounded: the list of sandboxes given up on keeps the
// newest maxUnresolved; the count keeps them all.
func TestUnresolvedBounded(t *testing.T) {
	h := newHarness(t, nil)
	for i := range maxUnresolved + 5 {
		h.srv.reg.giveUp(&cleanupJob{session: 1, id: fmt.Sprintf("sb-%d", i)}, sandbox.Unavailable, 1)
	}
	u := h.srv.Unresolved()
	if len(u) != maxUnresolved || u[len(u)-1].SandboxID != fmt.Sprintf("sb-%d", maxUnresolved+4) || u[0].SandboxID != "sb-5" {
		t.Errorf("%d listed, first %s last %s", len(u), u[0].SandboxID, u[len(u)-1].SandboxID)
	}
	if n := h.srv.UnresolvedCount(); n != maxUnresolved+5 {
		t.Errorf("count %d, want %d", n, maxUnresolved+5)
	}
	// None of them was real: the harness's shutdown must not report them.
	h.srv.reg.state.mu.Lock()
	h.srv.reg.state.unresolved, h.srv.reg.state.dropped = nil, 0
	h.srv.reg.state.mu.Unlock()
}

// TestSandboxesPerSession: one session owns at most SandboxesPerSession
// sandboxes, concurrent creates included; killing one makes room.
func TestSandboxesPerSession(t *testing.T) {
	h := newHarness(t, &harnessOptions{limits: Limits{SandboxesPerSession: 3}})
	c := h.connect()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ids []string
	refused := 0
	for range 8 {
		wg.Go(func() {
			res, err := c.callErr("create_sandbox", map[string]any{})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if res.IsError {
				if te := toolErrorOf(t, "create_sandbox", res); te.Code != codeTooManySandboxes || te.Category != sandbox.RateLimited {
					t.Errorf("refusal %+v", te)
				}
				refused++
				return
			}
			var out struct {
				SandboxID string `json:"sandbox_id"`
			}
			data, _ := json.Marshal(res.StructuredContent)
			_ = json.Unmarshal(data, &out)
			ids = append(ids, out.SandboxID)
		})
	}
	wg.Wait()
	if len(ids) != 3 || refused != 5 || h.fp.LiveCount() != 3 {
		t.Fatalf("%d created, %d refused, %d live; want 3, 5, 3", len(ids), refused, h.fp.LiveCount())
	}
	c.ok("kill_sandbox", map[string]any{"sandbox_id": ids[0]})
	c.ok("create_sandbox", map[string]any{})
	if te := c.fail("create_sandbox", map[string]any{}); te.Code != codeTooManySandboxes {
		t.Errorf("fourth create: %+v", te)
	}
	c.close()
	waitFor(t, "the session's sandboxes destroyed", func() bool { return h.fp.LiveCount() == 0 })
}

// TestLongCallOutlivesReadTimeout: the read timeout bounds reading the
// body only; a call that takes longer than it after the body was read is
// answered.
func TestLongCallOutlivesReadTimeout(t *testing.T) {
	h := newHarness(t, nil)
	hs := h.srv.HTTPServer(&HTTPOptions{ReadTimeout: 200 * time.Millisecond})
	ts := httptest.NewUnstartedServer(hs.Handler)
	ts.Config.ReadHeaderTimeout = hs.ReadHeaderTimeout
	ts.Start()
	defer ts.Close()
	hc := httpClient(t, nil)
	id := rawSession(t, hc, ts.URL)
	h.fp.InjectFault(fakeprovider.Fault{Op: sandbox.OpListSandboxes, Delay: 700 * time.Millisecond, Times: 1})
	resp, body := rawPost(t, hc, ts.URL, id, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_sandboxes","arguments":{}}}`), nil)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"sandboxes"`)) {
		t.Errorf("a call longer than the read timeout: %d %q", resp.StatusCode, body)
	}
	rawDelete(t, hc, ts.URL, id)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = h.srv.Shutdown(ctx)
}
