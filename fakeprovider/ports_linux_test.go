//go:build linux

package fakeprovider_test

import (
	"context"
	"io"
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

// TestProvider_NamespaceCodeInterpreter: port 49999 of a namespace
// sandbox reaches the sandbox's own code interpreter, whose python is a
// real python3 that sees the sandbox's files, through the journal like
// the in-memory one.
func TestProvider_NamespaceCodeInterpreter(t *testing.T) {
	f := namespaceFixture(t)
	id := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	if code, out := runInSandbox(t, f, id, "echo from-envd > /home/user/note.txt"); code != 0 {
		t.Fatalf("writing the note: %d %s", code, out)
	}
	h := map[string]string{"E2b-Sandbox-Id": id, "E2b-Sandbox-Port": "49999"}
	res := f.doWith("POST", "https://ignored.example/execute", map[string]any{"code": "import sys\nopen('/home/user/note.txt').read().strip() + ' ' + sys.implementation.name"}, h)
	if res.status != 200 || !strings.Contains(string(res.body), `"text":"from-envd cpython"`) {
		t.Errorf("POST /execute: %d %s", res.status, res.body)
	}
	if n := len(f.p.Journal().Calls("POST /execute")); n != 1 {
		t.Errorf("journal has %d POST /execute entries, want 1", n)
	}
	res = f.doWith("POST", "https://ignored.example/execute", map[string]any{"code": "1", "context_id": "nope"}, h)
	if res.status != 404 || string(res.body) != "Context nope not found" {
		t.Errorf("unknown context: %d %q", res.status, res.body)
	}
}

// TestProvider_NamespaceExecuteOverHTTP: through the fake's own HTTP
// server, /execute streams of a namespace sandbox end with
// end_of_execution every time. Forwarding the request body while the
// answer already streamed cut them now and then (curl: "transfer closed
// with outstanding read data remaining").
func TestProvider_NamespaceExecuteOverHTTP(t *testing.T) {
	f := namespaceFixture(t)
	srv := f.p.Start(t)
	id := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	for i := range 20 {
		req, err := http.NewRequest("POST", srv.URL()+"/execute", strings.NewReader(`{"code": "print('line')\n1"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("E2b-Sandbox-Id", id)
		req.Header.Set("E2b-Sandbox-Port", "49999")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !strings.HasSuffix(string(body), "{\"type\":\"end_of_execution\"}\n") {
			t.Fatalf("execution %d: %v, stream %s", i, err, body)
		}
	}
}
