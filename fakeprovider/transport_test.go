package fakeprovider_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// streamHandler writes n lines, flushing each and waiting on gate before
// the next, and reports on done how it ended: "complete" or the
// context/write error. The reader opens the gate once it has a line, so the
// lines can only come one at a time: a transport that held the body back
// until the handler ended would hang (and fail on the hang guard).
func streamHandler(n int, gate <-chan struct{}, done chan<- string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/connect+json")
		w.WriteHeader(http.StatusOK)
		fl := w.(http.Flusher)
		for i := range n {
			if i > 0 {
				select {
				case <-gate:
				case <-r.Context().Done():
					done <- "ctx: " + r.Context().Err().Error()
					return
				}
			}
			if _, err := fmt.Fprintf(w, "event %d\n", i); err != nil {
				done <- "write: " + err.Error()
				return
			}
			fl.Flush()
		}
		done <- "complete"
	}
}

// wantIncremental reads a streamHandler's 4 lines from body, opening the
// handler's gate after each: that they all arrive shows each came while the
// handler still ran. The body's request must carry a hang guard.
func wantIncremental(t *testing.T, body io.Reader, gate chan<- struct{}) {
	t.Helper()
	var lines []string
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		gate <- struct{}{}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading stream after %q: %v (a line held back until the handler ended never opens its gate)", lines, err)
	}
	if strings.Join(lines, ",") != "event 0,event 1,event 2,event 3" {
		t.Fatalf("got events %q, want event 0 to 3", lines)
	}
}

// streamFixture is a Provider whose daemons stream (streamHandler), plus
// one sandbox; it returns the handler's gate and done channels.
func streamFixture(t *testing.T) (*fixture, string, chan struct{}, chan string) {
	done := make(chan string, 4)
	gate := make(chan struct{}, 4)
	ds := &daemons{handler: streamHandler(4, gate, done)}
	f := newFixture(t, &fakeprovider.Options{NewDaemon: ds.new})
	id := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	return f, id, gate, done
}

// hangGuardCtx is a context that ends after hangGuard, turning a hang into
// a failure.
func hangGuardCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	return ctx
}

func TestRoundTripper_Streams(t *testing.T) {
	f, id, gate, done := streamFixture(t)
	domain, _ := f.p.Domain(id)
	req, _ := http.NewRequestWithContext(hangGuardCtx(t), "POST", "https://49983-"+id+"."+domain+"/process.Process/Start", strings.NewReader("{}"))
	res, err := f.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/connect+json" || res.ContentLength != -1 {
		t.Fatalf("response %d %v %d", res.StatusCode, res.Header, res.ContentLength)
	}
	wantIncremental(t, res.Body, gate)
	if got := <-done; got != "complete" {
		t.Errorf("handler ended with %q", got)
	}
	if e := f.p.Journal().Calls(sandbox.OpProcessStart); len(e) != 1 || e[0].Status != 200 || string(e[0].Body) != "{}" || !e[0].Envd {
		t.Errorf("journal %+v", e)
	}
}

func TestRoundTripper_CancelReachesHandler(t *testing.T) {
	f, id, _, done := streamFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", "https://sandbox.sandboxkit.test/process.Process/Start", nil)
	req.Header.Set("E2b-Sandbox-Id", id)
	res, err := f.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	line, err := bufio.NewReader(res.Body).ReadString('\n')
	if err != nil || line != "event 0\n" {
		t.Fatalf("first event %q, %v", line, err)
	}
	cancel()
	select {
	case got := <-done:
		if !strings.Contains(got, "canceled") && !strings.Contains(got, "write") {
			t.Errorf("handler ended with %q", got)
		}
	case <-time.After(hangGuard):
		t.Fatal("cancellation did not reach the handler")
	}
	if _, err := io.ReadAll(res.Body); !errors.Is(err, context.Canceled) {
		t.Errorf("body read after cancel: %v", err)
	}
}

func TestRoundTripper_BodyCloseEndsHandler(t *testing.T) {
	f, id, _, done := streamFixture(t)
	req, _ := http.NewRequest("POST", "https://sandbox.sandboxkit.test/process.Process/Start", nil)
	req.Header.Set("E2b-Sandbox-Id", id)
	res, err := f.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(res.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	select {
	case got := <-done:
		if got == "complete" {
			t.Errorf("handler completed after the client closed the body")
		}
	case <-time.After(hangGuard):
		t.Fatal("closing the body did not end the handler")
	}
}

func TestRoundTripper_RequestBodyStreams(t *testing.T) {
	// The journal's tap must not read ahead: the daemon sees the first chunk
	// of a body whose writer is still writing.
	got := make(chan string, 1)
	ds := &daemons{handler: func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 5)
		_, err := io.ReadFull(r.Body, b)
		got <- fmt.Sprintf("%s %v", b, err)
		_, _ = io.Copy(io.Discard, r.Body)
	}}
	f := newFixture(t, &fakeprovider.Options{NewDaemon: ds.new})
	id := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", "https://sandbox.sandboxkit.test/files?path=/a", pr)
	req.Header.Set("E2b-Sandbox-Id", id)
	resc := make(chan error, 1)
	go func() {
		res, err := f.hc.Do(req)
		if err == nil {
			res.Body.Close()
		}
		resc <- err
	}()
	if _, err := pw.Write([]byte("first")); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "first <nil>" {
			t.Errorf("daemon read %q", s)
		}
	case <-time.After(hangGuard):
		t.Fatal("daemon did not see the first chunk while the body was open")
	}
	_, _ = pw.Write([]byte(" second"))
	pw.Close()
	if err := <-resc; err != nil {
		t.Fatal(err)
	}
	if e := f.p.Journal().Calls(sandbox.OpFilesUpload); len(e) != 1 || string(e[0].Body) != "first second" {
		t.Errorf("journal %+v", e)
	}
}

func TestProvider_RegisterHTTPMock(t *testing.T) {
	f, id, gate, done := streamFixture(t)
	mt := httpmock.NewMockTransport()
	f.p.Register(mt)
	hc := &http.Client{Transport: mt}

	req, _ := http.NewRequest("POST", "https://api.e2b.app/sandboxes", strings.NewReader(`{"templateID":"base"}`))
	req.Header.Set("X-API-Key", f.p.APIKey())
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 201 {
		t.Fatalf("create through httpmock: %d", res.StatusCode)
	}

	req, _ = http.NewRequestWithContext(hangGuardCtx(t), "POST", "https://sandbox.e2b.app/process.Process/Start", strings.NewReader("{}"))
	req.Header.Set("E2b-Sandbox-Id", id)
	res, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	wantIncremental(t, res.Body, gate)
	res.Body.Close()
	<-done

	f.p.InjectFault(fakeprovider.Fault{Op: sandbox.OpListSandboxes, Reset: true, Times: 1})
	req, _ = http.NewRequest("GET", "https://api.e2b.app/v2/sandboxes", nil)
	if _, err := hc.Do(req); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("reset through httpmock: %v", err)
	}
	if got := f.p.Journal().Ops(); len(got) != 3 {
		t.Errorf("journal ops %q", got)
	}
	if mt.GetTotalCallCount() != 3 {
		t.Errorf("httpmock counted %d calls", mt.GetTotalCallCount())
	}
}

func TestRoundTripper_Concurrent(t *testing.T) {
	f := newFixture(t, nil)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			sb := f.create(map[string]any{"templateID": "base"})
			id := sb["sandboxID"].(string)
			f.do("GET", "/sandboxes/"+id, nil)
			f.do("GET", "/v2/sandboxes?limit=3", nil)
			f.clock.Advance(time.Millisecond)
			f.do("DELETE", "/sandboxes/"+id, nil)
		})
	}
	wg.Wait()
	if n := f.p.LiveCount(); n != 0 {
		t.Errorf("%d sandboxes left", n)
	}
	if n := f.p.Journal().Len(); n != 80 {
		t.Errorf("journal has %d entries, want 80", n)
	}
}

func TestRoundTripper_EdgeCases(t *testing.T) {
	ds := &daemons{handler: func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/panic":
			panic("boom")
		case "/abort":
			panic(http.ErrAbortHandler)
		case "/late-abort":
			_, _ = io.WriteString(w, "partial")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		case "/sized":
			w.Header().Set("Content-Length", "5")
			_, _ = io.WriteString(w, "hello")
		case "/sniff":
			_, _ = io.WriteString(w, "<html><body>hi</body></html>")
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}}
	f := newFixture(t, &fakeprovider.Options{NewDaemon: ds.new})
	id := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	get := func(method, path string) (*http.Response, error) {
		req, _ := http.NewRequest(method, "http://sandbox.local"+path, nil)
		req.Header.Set("E2b-Sandbox-Id", id)
		return f.hc.Do(req)
	}
	for _, path := range []string{"/panic", "/abort"} {
		if _, err := get("GET", path); err == nil {
			t.Errorf("%s: no error", path)
		}
	}
	res, err := get("GET", "/late-abort")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(res.Body); err == nil || string(b) != "partial" {
		t.Errorf("late abort: %q, %v", b, err)
	}
	res.Body.Close()
	res, err = get("GET", "/sized")
	if err != nil || res.ContentLength != 5 {
		t.Fatalf("sized: %v %v", res, err)
	}
	res.Body.Close()
	res, err = get("GET", "/sniff")
	if err != nil || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("sniff: %v %v", res, err)
	}
	res.Body.Close()
	res, err = get("HEAD", "/health")
	if err != nil || res.StatusCode != 204 || res.Body != http.NoBody {
		t.Fatalf("HEAD: %v %v", res, err)
	}
	if _, err := f.p.RoundTripper().RoundTrip(&http.Request{Method: "GET"}); err == nil {
		t.Error("request without URL accepted")
	}
}

func TestProvider_LiveSandboxes(t *testing.T) {
	f := newFixture(t, nil)
	b := f.p.AddSandbox(fakeprovider.SandboxSeed{ID: "b", StartedAt: t0})
	a := f.p.AddSandbox(fakeprovider.SandboxSeed{ID: "a", StartedAt: t0})
	c := f.p.AddSandbox(fakeprovider.SandboxSeed{ID: "c", StartedAt: t0.Add(-time.Second), State: fakeprovider.StatePaused})
	var ids []string
	for _, r := range f.p.LiveSandboxes() {
		ids = append(ids, r.ID)
	}
	if want := []string{c, a, b}; strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Errorf("LiveSandboxes order %v, want %v", ids, want)
	}
	if !f.p.Now().Equal(t0) {
		t.Errorf("Now = %v", f.p.Now())
	}
	f.p.Close()
	if f.p.LiveCount() != 0 {
		t.Error("Close left sandboxes")
	}
}
