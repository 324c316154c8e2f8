package fakeprovider_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

func TestListen_LoopbackOnly(t *testing.T) {
	p := fakeprovider.New(nil)
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "example.com:80", "[::]:0", "nonsense"} {
		if s, err := p.Listen(addr); err == nil {
			s.Close()
			t.Errorf("Listen(%q) succeeded", addr)
		} else if addr != "nonsense" && !strings.Contains(err.Error(), "loopback") {
			t.Errorf("Listen(%q): error %q does not say why", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0"} {
		s, err := p.Listen(addr)
		if err != nil {
			if addr == "[::1]:0" {
				t.Logf("no IPv6 loopback here: %v", err)
				continue
			}
			t.Fatalf("Listen(%q): %v", addr, err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}
}

func TestServer_ServesAndCountsConnections(t *testing.T) {
	f := newFixture(t, nil)
	srv := f.p.Start(t)
	if !strings.HasPrefix(srv.URL(), "http://127.0.0.1:") {
		t.Fatalf("URL = %q", srv.URL())
	}
	tr := &http.Transport{}
	hc := &http.Client{Transport: tr}
	for range 3 {
		req, _ := http.NewRequest("POST", srv.URL()+"/sandboxes", strings.NewReader(`{"templateID":"base"}`))
		req.Header.Set("X-API-Key", f.p.APIKey())
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 201 {
			t.Fatalf("create over loopback: %d", res.StatusCode)
		}
	}
	if n := f.p.LiveCount(); n != 3 {
		t.Errorf("LiveCount = %d", n)
	}
	if n := srv.OpenConnections(); n != 1 {
		t.Errorf("OpenConnections = %d with one idle keep-alive connection, want 1", n)
	}
	tr.CloseIdleConnections()
	deadline := time.Now().Add(hangGuard)
	for srv.OpenConnections() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("OpenConnections = %d after the client closed its connections", srv.OpenConnections())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if e := f.p.Journal().Entries(); len(e) != 3 || !strings.HasPrefix(e[0].Host, "127.0.0.1:") {
		t.Errorf("journal %d entries, host %q", len(e), e[0].Host)
	}
}

func TestServer_StreamsAndRoutesEnvd(t *testing.T) {
	f, id, gate, done := streamFixture(t)
	srv := f.p.Start(t)
	hc := &http.Client{Transport: &http.Transport{}}
	req, _ := http.NewRequestWithContext(hangGuardCtx(t), "POST", srv.URL()+"/process.Process/Start", strings.NewReader("{}"))
	req.Header.Set("E2b-Sandbox-Id", id)
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	wantIncremental(t, res.Body, gate)
	<-done
}

func TestServer_CloseEndsHangingRequests(t *testing.T) {
	f := newFixture(t, nil)
	srv, err := f.p.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := f.p.InjectFault(fakeprovider.Fault{Hang: true})
	defer h.Release()
	errc := make(chan error, 1)
	go func() {
		res, err := (&http.Client{Transport: &http.Transport{}}).Get(srv.URL() + "/v2/sandboxes")
		if err == nil {
			res.Body.Close()
		}
		errc <- err
	}()
	for f.p.Journal().Len() == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err == nil {
			t.Error("hanging request succeeded after Close")
		}
	case <-time.After(hangGuard):
		t.Fatal("Close left the request hanging")
	}
}
