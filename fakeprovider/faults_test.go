package fakeprovider_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/internal/envdapi"
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
		{Op: "GET /nope"}, {Status: 42}, {Status: 700}, {Times: -1}, {Drip: -1},
		{Oversize: -1}, {Oversize: 10, Body: "{}"}, {Oversize: 10, Malformed: true},
		{Oversize: 10, Reset: true}, {Oversize: 10, Status: 204},
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

// TestProvider_FaultDelay checks that a delayed request goes on to its
// handler, and (with a delay longer than any test) that the delay holds it
// until the request's own deadline ends it: no elapsed time is measured.
func TestProvider_FaultDelay(t *testing.T) {
	f := newFixture(t, nil)
	f.p.InjectFault(fakeprovider.Fault{Op: sandbox.OpListSandboxes, Delay: time.Millisecond, Times: 1})
	if res := f.do("GET", "/v2/sandboxes", nil); res.status != 200 {
		t.Fatalf("delayed list: %d", res.status)
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
	// Both requests are held by the fault: neither has an answer nor
	// reached the handler.
	waitInFlight(t, h, 2)
	select {
	case res := <-done:
		t.Fatalf("hung request returned before Release: %d", res.status)
	default:
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
		case <-time.After(hangGuard):
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

// eachTransport runs fn with a fresh fixture twice: through the in-process
// RoundTripper and over a loopback listener.
func eachTransport(t *testing.T, opts func() *fakeprovider.Options, fn func(t *testing.T, f *fixture, hc *http.Client, base string)) {
	t.Run("in-process", func(t *testing.T) {
		f := newFixture(t, opts())
		fn(t, f, f.hc, apiBase)
	})
	t.Run("loopback", func(t *testing.T) {
		f := newFixture(t, opts())
		srv := f.p.Start(t)
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		fn(t, f, &http.Client{Transport: tr}, srv.URL())
	})
}

// noOpts selects the default options.
func noOpts() *fakeprovider.Options { return nil }

// send sends a control-plane request with the fake's API key; it fails t
// unless the response (its status and headers) arrives.
func (f *fixture) send(ctx context.Context, hc *http.Client, method, url string) *http.Response {
	f.t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("X-API-Key", f.p.APIKey())
	res, err := hc.Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, url, err)
	}
	return res
}

// hangGuard bounds the tests' waits. It only turns a hang into a failure:
// no test passes or fails on how long something took (CI may be busy).
const hangGuard = 2 * time.Minute

// waitIdle fails t unless h's requests all end (a hang fails after
// hangGuard).
func waitIdle(t *testing.T, h *fakeprovider.FaultHandle) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := h.WaitIdle(ctx); err != nil {
		t.Fatalf("WaitIdle: %v (InFlight %d)", err, h.InFlight())
	}
}

// waitInFlight fails t unless h's InFlight becomes n (a hang fails after
// hangGuard).
func waitInFlight(t *testing.T, h *fakeprovider.FaultHandle, n int) {
	t.Helper()
	for deadline := time.Now().Add(hangGuard); h.InFlight() != n; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("InFlight = %d, want %d", h.InFlight(), n)
		}
	}
}

// lastFault returns the Fault and Status of the journal's last entry.
func lastFault(p *fakeprovider.Provider) (string, int) {
	e := p.Journal().Entries()
	return e[len(e)-1].Fault, e[len(e)-1].Status
}

// A held request with a body ends when its client goes away, over loopback
// too (where net/http notices a closed connection only once the body is
// read); when released, the handler still gets the whole body.
func TestProvider_FaultHoldsBodiedRequests(t *testing.T) {
	for _, hold := range []fakeprovider.Fault{{Hang: true}, {Delay: time.Hour}} {
		eachTransport(t, noOpts, func(t *testing.T, f *fixture, hc *http.Client, base string) {
			id := f.p.AddSandbox(fakeprovider.SandboxSeed{})
			hold.Op = sandbox.OpSetTimeout
			h := f.p.InjectFault(hold)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				req, _ := http.NewRequestWithContext(ctx, "POST", base+"/sandboxes/"+id+"/timeout", strings.NewReader(`{"timeout": 60}`))
				req.Header.Set("X-API-Key", f.p.APIKey())
				req.Header.Set("Content-Type", "application/json")
				res, err := hc.Do(req)
				if err == nil {
					res.Body.Close()
				}
				done <- err
			}()
			waitInFlight(t, h, 1)
			cancel()
			if err := <-done; err == nil {
				t.Error("a held request answered before it was released")
			}
			waitIdle(t, h)
			h.Clear()
			if hold.Hang {
				h = f.p.InjectFault(fakeprovider.Fault{Op: sandbox.OpSetTimeout, Hang: true, Times: 1})
				go func() { waitInFlight(t, h, 1); h.Release() }()
				req, _ := http.NewRequest("POST", base+"/sandboxes/"+id+"/timeout", strings.NewReader(`{"timeout": 60}`))
				req.Header.Set("X-API-Key", f.p.APIKey())
				req.Header.Set("Content-Type", "application/json")
				res, err := hc.Do(req)
				if err != nil || res.StatusCode != http.StatusNoContent {
					t.Fatalf("released request: %v %v", res, err)
				}
				res.Body.Close()
			}
		})
	}
}

// A Drip fault sends the status and headers at once, then holds the body
// until the request ends: an hour-long drip must not keep the response head
// from the client, nor keep the handler once the client cancels.
func TestProvider_FaultDripHeadersFirst(t *testing.T) {
	eachTransport(t, noOpts, func(t *testing.T, f *fixture, hc *http.Client, base string) {
		id := f.p.AddSandbox(fakeprovider.SandboxSeed{})
		h := f.p.InjectFault(fakeprovider.Fault{Op: sandbox.OpGetSandbox, Drip: time.Hour})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res := f.send(ctx, hc, "GET", base+"/sandboxes/"+id)
		defer res.Body.Close()
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("head %d %v", res.StatusCode, res.Header)
		}
		if n := h.InFlight(); n != 1 {
			t.Errorf("InFlight while dripping = %d, want 1", n)
		}
		cancel()
		waitIdle(t, h)
		if b, err := io.ReadAll(res.Body); err == nil {
			t.Errorf("cancelled drip read %q cleanly", b)
		}
		if kind, status := lastFault(f.p); kind != "drip" || status != 200 {
			t.Errorf("journal: fault %q status %d", kind, status)
		}

		// A bodiless answer has nothing to drip.
		kill := f.p.InjectFault(fakeprovider.Fault{Op: sandbox.OpKillSandbox, Drip: time.Hour})
		res = f.send(context.Background(), hc, "DELETE", base+"/sandboxes/"+id)
		if b, err := io.ReadAll(res.Body); res.StatusCode != 204 || err != nil || len(b) != 0 {
			t.Errorf("dripped kill: %d %q %v", res.StatusCode, b, err)
		}
		res.Body.Close()
		waitIdle(t, kill)
	})
}

// Release ends a drip: what is left of the body goes out at once, whole.
func TestProvider_FaultDripRelease(t *testing.T) {
	eachTransport(t, noOpts, func(t *testing.T, f *fixture, hc *http.Client, base string) {
		id := f.p.AddSandbox(fakeprovider.SandboxSeed{})
		plain := f.send(context.Background(), hc, "GET", base+"/sandboxes/"+id)
		want, _ := io.ReadAll(plain.Body)
		plain.Body.Close()

		h := f.p.InjectFault(fakeprovider.Fault{Op: sandbox.OpGetSandbox, Drip: time.Hour})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res := f.send(ctx, hc, "GET", base+"/sandboxes/"+id)
		defer res.Body.Close()
		h.Release()
		got, err := io.ReadAll(res.Body)
		if err != nil || string(got) != string(want) {
			t.Errorf("released drip: %q %v, want %q", got, err, want)
		}
		waitIdle(t, h)
	})
}

// A Drip fault delivers a fault's own body and a handler's body byte-exact,
// and holds each byte back for its interval: with an interval longer than
// any test, the status and headers come but no body byte before the client
// gives up (no elapsed time is measured).
func TestProvider_FaultDripBody(t *testing.T) {
	eachTransport(t, noOpts, func(t *testing.T, f *fixture, hc *http.Client, base string) {
		const body = "0123456789"
		const drip = time.Millisecond
		held := f.p.InjectFault(fakeprovider.Fault{Op: sandbox.OpListSandboxes, Status: 503, Body: body, Drip: time.Hour, Times: 1})
		if got, status := readDripHeld(t, f, hc, base+"/v2/sandboxes"); got != "" || status != 503 {
			t.Errorf("status fault with an hour's Drip: %d %q before the client gave up; want no body byte", status, got)
		}
		waitIdle(t, held)
		f.p.InjectFault(fakeprovider.Fault{Op: sandbox.OpListSandboxes, Status: 503, Body: body, Drip: drip, Times: 1})
		res := f.send(context.Background(), hc, "GET", base+"/v2/sandboxes")
		got, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != 503 || res.Header.Get("Content-Type") != "application/json" || string(got) != body {
			t.Errorf("status fault: %d %v %q %v", res.StatusCode, res.Header, got, err)
		}
		if kind, _ := lastFault(f.p); kind != "status" {
			t.Errorf("journal fault %q, want status", kind)
		}

		id := f.p.AddSandbox(fakeprovider.SandboxSeed{})
		plain := f.send(context.Background(), hc, "GET", base+"/sandboxes/"+id)
		want, _ := io.ReadAll(plain.Body)
		plain.Body.Close()
		held = f.p.InjectFault(fakeprovider.Fault{Op: sandbox.OpGetSandbox, Drip: time.Hour, Times: 1})
		if got, status := readDripHeld(t, f, hc, base+"/sandboxes/"+id); got != "" || status != 200 {
			t.Errorf("get with an hour's Drip: %d %q before the client gave up; want no body byte", status, got)
		}
		waitIdle(t, held)
		h := f.p.InjectFault(fakeprovider.Fault{Op: sandbox.OpGetSandbox, Drip: time.Millisecond, Times: 1})
		res = f.send(context.Background(), hc, "GET", base+"/sandboxes/"+id)
		got, err = io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != 200 || !bytes.Equal(got, want) {
			t.Errorf("dripped get: %d %q %v, want %q", res.StatusCode, got, err, want)
		}
		waitIdle(t, h)
		if kind, status := lastFault(f.p); kind != "drip" || status != 200 {
			t.Errorf("journal: fault %q status %d", kind, status)
		}
	})
}

// readDripHeld sends a GET whose body a Drip fault of an hour holds: it
// returns the status and whatever body bytes the client could read once it
// had the headers and then cancelled the request. A working Drip sends no
// body byte in that time; a body sent whole arrives with the headers.
func readDripHeld(t *testing.T, f *fixture, hc *http.Client, url string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	res := f.send(ctx, hc, "GET", url)
	defer res.Body.Close()
	cancel()
	got, _ := io.ReadAll(res.Body)
	return string(got), res.StatusCode
}

// sandboxHeader addresses every request to one sandbox's daemon.
type sandboxHeader struct {
	rt http.RoundTripper
	id string
}

func (s sandboxHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("E2b-Sandbox-Id", s.id)
	return s.rt.RoundTrip(r)
}

// A Drip fault slows an envd server stream without corrupting it, and
// cancelling the stream ends the daemon's handler.
func TestProvider_FaultDripEnvdStream(t *testing.T) {
	opts := func() *fakeprovider.Options { return &fakeprovider.Options{NewDaemon: newConnectDaemon} }
	eachTransport(t, opts, func(t *testing.T, f *fixture, hc *http.Client, base string) {
		id := f.p.AddSandbox(fakeprovider.SandboxSeed{})
		hc = &http.Client{Transport: sandboxHeader{rt: hc.Transport, id: id}}
		start := connect.NewClient[envdapi.StartRequest, envdapi.StartResponse](hc, base+"/process.Process/Start", connect.WithCodec(envdapi.Codec{}))
		req := connect.NewRequest(&envdapi.StartRequest{Process: envdapi.ProcessConfig{Cmd: "echo"}})

		// The three events and the end of stream are well over 100 bytes.
		// That the stream is slowed, not sent whole, is checked below with an
		// hour's Drip: no event arrives before the client cancels.
		const drip = 3 * time.Millisecond
		h := f.p.InjectFault(fakeprovider.Fault{Op: sandbox.OpProcessStart, Drip: drip, Times: 1})
		st, err := start.CallServerStream(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		var got []envdapi.ProcessEvent
		for st.Receive() {
			got = append(got, st.Msg().Event)
		}
		st.Close()
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[0].Start == nil || got[0].Start.Pid != 42 || string(got[1].Data.Stdout) != "echo" || got[2].End == nil {
			t.Fatalf("events %+v", got)
		}
		waitIdle(t, h)
		if kind, status := lastFault(f.p); kind != "drip" || status != 200 {
			t.Errorf("journal: fault %q status %d", kind, status)
		}

		h = f.p.InjectFault(fakeprovider.Fault{Op: sandbox.OpProcessStart, Drip: time.Hour})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st, err = start.CallServerStream(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if ct := st.ResponseHeader().Get("Content-Type"); ct != "application/connect+json" {
			t.Errorf("stream head: Content-Type %q", ct)
		}
		if n := h.InFlight(); n != 1 {
			t.Errorf("InFlight while dripping = %d, want 1", n)
		}
		cancel()
		waitIdle(t, h)
		if st.Receive() {
			t.Error("cancelled stream delivered an event")
		}
	})
}

// An Oversize fault answers with the status asked for (else the route's
// success status), JSON's content type and exactly Oversize bytes of an
// unterminated JSON string, and never reaches the handler.
func TestProvider_FaultOversize(t *testing.T) {
	f := newFixture(t, nil)
	id := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	for _, tt := range []struct {
		name         string
		fault        fakeprovider.Fault
		method, path string
		status       int
	}{
		{"create", fakeprovider.Fault{Op: sandbox.OpCreateSandbox, Oversize: 1<<20 + 5}, "POST", "/sandboxes", 201},
		{"custom status", fakeprovider.Fault{Op: sandbox.OpGetSandbox, Status: 500, Oversize: 100}, "GET", "/sandboxes/" + id, 500},
		{"kill (204 route)", fakeprovider.Fault{Op: sandbox.OpKillSandbox, Oversize: 3 * 32 << 10}, "DELETE", "/sandboxes/" + id, 200},
		{"shorter than the prefix", fakeprovider.Fault{Op: sandbox.OpListSandboxes, Oversize: 5}, "GET", "/v2/sandboxes", 200},
		{"dripped", fakeprovider.Fault{Op: sandbox.OpListSandboxes, Oversize: 20, Drip: time.Millisecond}, "GET", "/v2/sandboxes", 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.fault.Times = 1
			f.p.InjectFault(tt.fault)
			res := f.send(context.Background(), f.hc, tt.method, apiBase+tt.path)
			defer res.Body.Close()
			head := make([]byte, min(tt.fault.Oversize, 20))
			if _, err := io.ReadFull(res.Body, head); err != nil {
				t.Fatal(err)
			}
			rest, err := io.Copy(io.Discard, res.Body)
			if err != nil {
				t.Fatal(err)
			}
			want := (`{"sandboxID":"` + strings.Repeat("a", 20))[:len(head)]
			if string(head) != want || int64(len(head))+rest != tt.fault.Oversize {
				t.Errorf("body %q... of %d bytes, want %q... of %d", head, int64(len(head))+rest, want, tt.fault.Oversize)
			}
			if res.StatusCode != tt.status || res.Header.Get("Content-Type") != "application/json" || res.ContentLength != -1 {
				t.Errorf("head %d %v length %d", res.StatusCode, res.Header, res.ContentLength)
			}
			if kind, status := lastFault(f.p); kind != "oversize" || status != tt.status {
				t.Errorf("journal: fault %q status %d", kind, status)
			}
		})
	}
	if n := f.p.LiveCount(); n != 1 {
		t.Errorf("oversized create/kill reached the handler: %d live", n)
	}
}

// A client that reads part of an endless oversized body and closes it ends
// the fault's work: the body is generated as it is sent, not in advance.
func TestProvider_FaultOversizeAbandoned(t *testing.T) {
	eachTransport(t, noOpts, func(t *testing.T, f *fixture, hc *http.Client, base string) {
		h := f.p.InjectFault(fakeprovider.Fault{Op: sandbox.OpListSandboxes, Oversize: 1 << 50})
		res := f.send(context.Background(), hc, "GET", base+"/v2/sandboxes")
		if n, err := io.CopyN(io.Discard, res.Body, 1<<20); err != nil {
			t.Fatalf("read %d bytes: %v", n, err)
		}
		res.Body.Close()
		waitIdle(t, h)
	})
}

// InFlight counts the requests a fault holds until their handling ends;
// WaitIdle waits for it to reach 0.
func TestProvider_FaultInFlight(t *testing.T) {
	f := newFixture(t, nil)
	h := f.p.InjectFault(fakeprovider.Fault{Op: sandbox.OpListSandboxes, Hang: true})
	var cancels [3]context.CancelFunc
	done := make(chan error, 3)
	for i := range cancels {
		ctx, cancel := context.WithCancel(context.Background())
		cancels[i] = cancel
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", apiBase+"/v2/sandboxes", nil)
		req.Header.Set("X-API-Key", f.p.APIKey())
		go func() {
			res, err := f.hc.Do(req)
			if err == nil {
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					err = errors.New(res.Status)
				}
			}
			done <- err
		}()
	}
	waitInFlight(t, h, 3)
	cancels[0]()
	cancels[1]()
	for range 2 {
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled request: %v", err)
		}
	}
	waitInFlight(t, h, 1)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := h.WaitIdle(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitIdle with a request held: %v", err)
	}
	if n := h.InFlight(); n != 1 {
		t.Errorf("InFlight after WaitIdle timed out = %d, want 1", n)
	}
	h.Release()
	if err := <-done; err != nil {
		t.Errorf("released request: %v", err)
	}
	waitIdle(t, h)
	if n, hits := h.InFlight(), h.Hits(); n != 0 || hits != 3 {
		t.Errorf("InFlight %d, Hits %d; want 0, 3", n, hits)
	}
}

// The journal names each fault by its outcome, else by how it slows the
// request; "drip" only when Drip is all it does.
func TestProvider_FaultKindsJournaled(t *testing.T) {
	f := newFixture(t, nil)
	for _, tt := range []struct {
		fault fakeprovider.Fault
		kind  string
	}{
		{fakeprovider.Fault{Drip: time.Millisecond}, "drip"},
		{fakeprovider.Fault{Oversize: 10}, "oversize"},
		{fakeprovider.Fault{Oversize: 10, Status: 429, Drip: time.Millisecond}, "oversize"},
		{fakeprovider.Fault{Status: 429, Drip: time.Millisecond}, "status"},
		{fakeprovider.Fault{Malformed: true, Drip: time.Millisecond}, "malformed"},
		{fakeprovider.Fault{Delay: time.Millisecond, Drip: time.Millisecond}, "delay"},
		{fakeprovider.Fault{}, "pass"},
	} {
		tt.fault.Op, tt.fault.Times = sandbox.OpListSandboxes, 1
		f.p.InjectFault(tt.fault)
		f.do("GET", "/v2/sandboxes", nil)
		if kind, _ := lastFault(f.p); kind != tt.kind {
			t.Errorf("%+v journaled as %q, want %q", tt.fault, kind, tt.kind)
		}
	}
}
