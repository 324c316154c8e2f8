package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/internal/syncbuf"
)

// httpClient returns a client with its own transport, closed at the end of
// the test so that no connection goroutine outlives it.
func httpClient(t *testing.T, header http.Header) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	var rt http.RoundTripper = tr
	if header != nil {
		rt = headerRT{tr, header}
	}
	return &http.Client{Transport: rt}
}

type headerRT struct {
	next http.RoundTripper
	h    http.Header
}

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.h {
		r.Header[k] = v
	}
	return h.next.RoundTrip(r)
}

// serveTwoPrincipals serves h over HTTP with a tokens file of two
// principals: token-of-alice-123 is alice's, token-of-bob-4567 bob's
// (bearer makes a client that sends one).
func serveTwoPrincipals(t *testing.T, h *harness) *httptest.Server {
	t.Helper()
	return serveHTTP(t, h, &HTTPOptions{Tokens: map[string]string{"token-of-alice-123": "alice", "token-of-bob-4567": "bob"}})
}

// serveHTTP serves the harness's server on loopback.
func serveHTTP(t *testing.T, h *harness, opts *HTTPOptions) *httptest.Server {
	ts := httptest.NewServer(h.srv.HTTPHandler(opts))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = h.srv.Shutdown(ctx) // ends the SSE streams, so Close does not wait on them
		ts.Close()
	})
	return ts
}

// connectHTTP opens a Streamable HTTP session.
func connectHTTP(t *testing.T, h *harness, url string, hc *http.Client) *client {
	t.Helper()
	cl := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil)
	cs, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url + MCPPath, HTTPClient: hc, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: testProtocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return &client{h: h, cs: cs}
}

func toolsJSON(t *testing.T, cs *mcp.ClientSession) []byte {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(res.Tools)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestHTTPDeleteDestroysOwned(t *testing.T) {
	h := newHarness(t, nil)
	ext := h.fp.AddSandbox(fakeprovider.SandboxSeed{})
	ts := serveHTTP(t, h, nil)
	c := connectHTTP(t, h, ts.URL, httpClient(t, nil))
	c.ok("create_sandbox", nil)
	c.ok("run_command", map[string]any{"command": "echo hi"})
	c.ok("get_sandbox", map[string]any{"sandbox_id": ext})
	if h.fp.LiveCount() != 2 {
		t.Fatalf("live %d", h.fp.LiveCount())
	}
	// TOOLS-2: the same tools/list as over in-memory transports.
	mem := h.connect()
	if a, b := toolsJSON(t, c.cs), toolsJSON(t, mem.cs); !bytes.Equal(a, b) {
		t.Error("TOOLS-2: tools/list differs between HTTP and in-memory")
	}
	mem.close()
	if err := c.cs.Close(); err != nil { // sends DELETE
		t.Fatal(err)
	}
	waitFor(t, "owned sandbox destroyed after DELETE", func() bool { return h.fp.LiveCount() == 1 })
	if _, ok := h.fp.Sandbox(ext); !ok {
		t.Error("external sandbox destroyed")
	}
}

// TestHTTPIdleTimeoutDestroysOwned checks that an idle session's sandboxes
// go with it, and that it is the session timeout that decides: a session
// on an endpoint whose sessions never time out keeps its sandbox, and stays
// usable, after the short-timeout session's sandbox is gone. No elapsed time
// is measured.
func TestHTTPIdleTimeoutDestroysOwned(t *testing.T) {
	h := newHarness(t, nil)
	short := serveHTTP(t, h, &HTTPOptions{SessionTimeout: 300 * time.Millisecond})
	never := serveHTTP(t, h, &HTTPOptions{SessionTimeout: -1})
	kept := connectHTTP(t, h, never.URL, httpClient(t, nil))
	keptID := kept.ok("create_sandbox", nil)["sandbox_id"].(string)
	c := connectHTTP(t, h, short.URL, httpClient(t, nil))
	idleID := c.ok("create_sandbox", nil)["sandbox_id"].(string)
	waitFor(t, "idle session cleaned up", func() bool { _, ok := h.fp.Sandbox(idleID); return !ok })
	if _, ok := h.fp.Sandbox(keptID); !ok {
		t.Fatal("the sandbox of a session that never times out was destroyed too")
	}
	kept.ok("run_command", map[string]any{"sandbox_id": keptID, "command": "true"})
}

func TestHTTPSecurity(t *testing.T) {
	h := newHarness(t, nil)
	const token = "tok-0123456789abcdef"
	ts := serveHTTP(t, h, &HTTPOptions{Token: token})
	hc := httpClient(t, nil)
	post := func(host, auth string) int {
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"0"}}}`
		req, _ := http.NewRequest(http.MethodPost, ts.URL+MCPPath, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if host != "" {
			req.Host = host
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		name, host, auth string
		want             int
	}{
		{"no token", "", "", http.StatusUnauthorized},
		{"wrong token", "", "Bearer nope", http.StatusUnauthorized},
		{"wrong scheme", "", "Basic " + token, http.StatusUnauthorized},
		{"DNS rebinding", "evil.example.com", "Bearer " + token, http.StatusForbidden},
		{"good", "", "Bearer " + token, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := post(tc.host, tc.auth); got != tc.want {
				t.Errorf("status %d, want %d", got, tc.want)
			}
		})
	}
	t.Run("client with token", func(t *testing.T) {
		c := connectHTTP(t, h, ts.URL, httpClient(t, http.Header{"Authorization": {"Bearer " + token}}))
		c.ok("list_sandboxes", nil)
		_ = c.cs.Close()
	})
	t.Run("healthz", func(t *testing.T) {
		resp, err := hc.Get(ts.URL + HealthPath)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != "ok\n" {
			t.Errorf("healthz %d %q", resp.StatusCode, body)
		}
	})
	t.Run("request body limit", func(t *testing.T) {
		ts2 := serveHTTP(t, h, &HTTPOptions{MaxRequestBodyBytes: 1024})
		req, _ := http.NewRequest(http.MethodPost, ts2.URL+MCPPath, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"`+strings.Repeat("a", 4096)+`"}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("status %d, want 413", resp.StatusCode)
		}
	})
}

func TestIsLoopbackAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "127.1.2.3:1": true, "[::1]:8080": true, "localhost:80": true,
		"0.0.0.0:8080": false, ":8080": false, "[::]:80": false, "10.0.0.1:80": false, "example.com:80": false, "127.0.0.1": false,
	} {
		if got := IsLoopbackAddr(addr); got != want {
			t.Errorf("IsLoopbackAddr(%q) = %v, want %v", addr, got, want)
		}
	}
}

// buildBinary builds cmd/sandboxkit into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sandboxkit")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/sandboxkit/sandboxkit/cmd/sandboxkit").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestBinary runs the built command: stdio sessions and refusals.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := buildBinary(t)
	t.Run("stdio session and cleanup", func(t *testing.T) { testStdioBinary(t, bin) })
	t.Run("refuses to start without credentials", func(t *testing.T) { testServeWithoutCredentials(t, bin) })
}

// cleanEnv is an environment without provider credentials.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "E2B_") && !strings.HasPrefix(kv, "SANDBOXKIT_") {
			env = append(env, kv)
		}
	}
	return env
}

// testStdioBinary runs `sandboxkit serve --fake` over stdio: a session that
// creates and uses a sandbox, then ends at end of input; the process
// destroys the sandbox before it exits.
func testStdioBinary(t *testing.T, bin string) {
	var stderr syncbuf.Buffer
	cmd := exec.Command(bin, "serve", "--fake", "--log-level", "debug")
	cmd.Env = cleanEnv()
	cmd.Stderr = &stderr
	cl := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil)
	// Close waits this long for the server to exit on its own before it
	// signals it: a server that ignores the end of its input is killed and
	// fails the exit-code check below. Only a hang guard, not a bound.
	ct := &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Minute}
	cs, err := cl.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: testProtocolVersion})
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %s", name, err, resultJSON(t, res))
		}
		return res.StructuredContent.(map[string]any)
	}
	id := call("create_sandbox", nil)["sandbox_id"]
	if out := call("run_command", map[string]any{"command": "echo over stdio"}); out["stdout"] != "over stdio\n" {
		t.Errorf("run_command %v", out)
	}
	if got := call("list_sandboxes", nil)["sandboxes"].([]any); len(got) != 1 || got[0].(map[string]any)["sandbox_id"] != id {
		t.Errorf("list %v", got)
	}
	// TOOLS-2: the same tools/list as in-process.
	h := newHarness(t, nil)
	mem := h.connect()
	if a, b := toolsJSON(t, cs), toolsJSON(t, mem.cs); !bytes.Equal(a, b) {
		t.Error("TOOLS-2: tools/list differs between stdio and in-memory")
	}
	mem.close()

	if err := cs.Close(); err != nil { // closes stdin and waits for the process
		t.Errorf("close: %v\n%s", err, stderr.String())
	}
	// Exit code 0, not a signal: the server exited by itself at end of input.
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("exit: %v\n%s", cmd.ProcessState, stderr.String())
	}
	logs := stderr.String()
	for _, want := range []string{"FAKE provider", "owned sandbox destroyed", `tool=create_sandbox`} {
		if !strings.Contains(logs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "over stdio") {
		t.Error("logs contain a command's output")
	}
}

// testServeWithoutCredentials: a clear message naming E2B_API_KEY.
func testServeWithoutCredentials(t *testing.T, bin string) {
	for _, args := range [][]string{{"serve"}, {"serve", "--http", "127.0.0.1:0"}} {
		cmd := exec.Command(bin, args...)
		cmd.Env = cleanEnv()
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("%v started without credentials", args)
		}
		for _, want := range []string{"E2B_API_KEY", "--config", "--fake"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("%v: message lacks %q: %s", args, want, out)
			}
		}
	}
	cmd := exec.Command(bin, "serve", "--fake", "--http", "0.0.0.0:0")
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "SANDBOXKIT_HTTP_TOKEN") {
		t.Errorf("non-loopback without token: %v %s", err, out)
	}
}
