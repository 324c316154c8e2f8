//go:build linux

package fakeprovider_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// namespaceFixture is a fixture whose sandboxes are namespace sandboxes;
// it skips where they cannot start (not root, no overlayfs).
func namespaceFixture(t *testing.T) *fixture {
	t.Helper()
	nd, err := fakeprovider.NamespaceDaemon(context.Background(), fakeprovider.NamespaceOptions{})
	if err != nil {
		t.Skipf("namespace sandboxes unavailable here: %v", err)
	}
	return newFixture(t, &fakeprovider.Options{NewDaemon: nd})
}

// runInSandbox runs a bash script as the default user through the
// sandbox's envd and returns its exit code and output.
func runInSandbox(t *testing.T, f *fixture, id, script string) (int32, string) {
	t.Helper()
	hc := &http.Client{Transport: sandboxHeader{rt: f.hc.Transport, id: id}}
	c := connect.NewClient[envdapi.StartRequest, envdapi.StartResponse](hc, "https://envd.example"+envdapi.ProcessStartProcedure, connect.WithCodec(envdapi.Codec{}))
	stream, err := c.CallServerStream(context.Background(), connect.NewRequest(&envdapi.StartRequest{Process: envdapi.ProcessConfig{Cmd: "/bin/bash", Args: []string{"-c", script}}}))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var out strings.Builder
	for stream.Receive() {
		ev := stream.Msg().Event
		if ev.Data != nil {
			out.Write(ev.Data.Stdout)
			out.Write(ev.Data.Stderr)
		}
		if ev.End != nil {
			return ev.End.ExitCode, out.String()
		}
	}
	t.Fatalf("the process stream ended without an end event: %v", stream.Err())
	return 0, ""
}

// TestProvider_NamespacePortEndToEnd: `python3 -m http.server`, started in
// the background through envd, answers on host "8000-<id>.<domain>"
// through the fake; before it listens, and after the sandbox is killed,
// the edge's 502 answers say why.
func TestProvider_NamespacePortEndToEnd(t *testing.T) {
	f := namespaceFixture(t)
	id := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	host := "8000-" + id + ".sandboxkit.test"

	res := f.doWith("GET", "https://ignored.example/", nil, map[string]string{"Host": host})
	wantEdgeError(t, f.p, res, id, "The sandbox is running but port is not open", 8000)

	code, out := runInSandbox(t, f, id, "mkdir -p site && echo hello from $(id -un) > site/hello.txt && cd site && "+
		"(python3 -m http.server 8000 >/dev/null 2>&1 &) && "+
		"until python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 8000))' 2>/dev/null; do :; done")
	if code != 0 {
		t.Fatalf("starting the server: exit %d: %s", code, out)
	}
	res = f.doWith("GET", "https://ignored.example/hello.txt", nil, map[string]string{"Host": host})
	if res.status != 200 || string(res.body) != "hello from user\n" {
		t.Errorf("GET /hello.txt on port 8000: %d %q", res.status, res.body)
	}

	f.do("DELETE", "/sandboxes/"+id, nil)
	res = f.doWith("GET", "https://ignored.example/hello.txt", nil, map[string]string{"Host": host})
	wantEdgeError(t, f.p, res, id, "The sandbox was not found", 0)
}
