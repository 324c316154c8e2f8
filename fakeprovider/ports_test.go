package fakeprovider_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// portDaemon is a stub daemon whose sandbox has one server, on port 8000.
type portDaemon struct {
	stubDaemon
	server string // host:port of the server "inside" the sandbox
}

func (d *portDaemon) DialPort(ctx context.Context, port int) (net.Conn, error) {
	if port != 8000 {
		return nil, errors.New("nothing listens")
	}
	var dl net.Dialer
	return dl.DialContext(ctx, "tcp", d.server)
}

// TestProvider_PortRouting: with a daemon that reaches its sandbox's
// ports, a request for port 8000 (by header or by host, as getHost names
// it) reaches the server there, streamed; a port nothing listens on and a
// killed sandbox get the edge's 502 answers.
func TestProvider_PortRouting(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "port 8000 saw "+r.Method+" "+r.URL.Path+" for "+r.Host)
	}))
	t.Cleanup(srv.Close)
	f := newFixture(t, &fakeprovider.Options{NewDaemon: func(c fakeprovider.DaemonConfig) fakeprovider.Daemon {
		return &portDaemon{stubDaemon: stubDaemon{cfg: c}, server: srv.Listener.Addr().String()}
	}})
	id := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	host := "8000-" + id + ".sandboxkit.test"

	res := f.doWith("GET", "https://ignored.example/index.html", nil, map[string]string{"Host": host})
	if want := "port 8000 saw GET /index.html for " + host; res.status != 200 || string(res.body) != want {
		t.Errorf("by host: %d %q, want 200 %q", res.status, res.body, want)
	}
	res = f.doWith("POST", "https://ignored.example/x", "", map[string]string{"E2b-Sandbox-Id": id, "E2b-Sandbox-Port": "8000"})
	if res.status != 200 || !strings.HasPrefix(string(res.body), "port 8000 saw POST /x") {
		t.Errorf("by header: %d %q", res.status, res.body)
	}
	res = f.doWith("GET", "https://ignored.example/", nil, map[string]string{"Host": "8001-" + id + ".sandboxkit.test"})
	wantEdgeError(t, f.p, res, id, "The sandbox is running but port is not open", 8001)

	f.do("DELETE", "/sandboxes/"+id, nil)
	res = f.doWith("GET", "https://ignored.example/", nil, map[string]string{"Host": host})
	wantEdgeError(t, f.p, res, id, "The sandbox was not found", 0)
}

// TestProvider_PortRoutingInMemory: the in-memory daemon's sandboxes have
// no other ports: 502 "port is not open", as before.
func TestProvider_PortRoutingInMemory(t *testing.T) {
	f := newFixture(t, nil)
	id := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	res := f.doWith("GET", "https://ignored.example/", nil, map[string]string{"Host": "8000-" + id + ".sandboxkit.test"})
	wantEdgeError(t, f.p, res, id, "The sandbox is running but port is not open", 8000)
}

// TestProvider_PortUpgrade: a connection upgrade (WebSocket's handshake)
// to a sandbox port goes through the fake's HTTP server, and bytes then
// flow both ways.
func TestProvider_PortUpgrade(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" {
			http.Error(w, "want Upgrade: echo", http.StatusBadRequest)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		_ = rw.Flush()
		line, _ := rw.ReadString('\n')
		_, _ = rw.WriteString("echo " + line)
		_ = rw.Flush()
	}))
	t.Cleanup(srv.Close)
	f := newFixture(t, &fakeprovider.Options{NewDaemon: func(c fakeprovider.DaemonConfig) fakeprovider.Daemon {
		return &portDaemon{stubDaemon: stubDaemon{cfg: c}, server: srv.Listener.Addr().String()}
	}})
	id := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	fake := f.p.Start(t)
	conn, err := net.Dial("tcp", fake.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "GET /ws HTTP/1.1\r\nHost: 8000-"+id+".sandboxkit.test\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %v %v", err, resp)
	}
	_, _ = io.WriteString(conn, "ping\n")
	if line, err := br.ReadString('\n'); err != nil || line != "echo ping\n" {
		t.Errorf("after the upgrade: %q %v, want the server's echo", line, err)
	}
}
