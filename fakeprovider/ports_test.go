package fakeprovider_test

import (
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
