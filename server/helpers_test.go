package server

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/internal/fakeenvd"
	"github.com/sandboxkit/sandboxkit/internal/syncbuf"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// testProtocolVersion pins the client to a version with sessions.
const testProtocolVersion = "2025-11-25"

// harness is one server on one fake provider.
type harness struct {
	t    *testing.T
	fp   *fakeprovider.Provider
	srv  *Server
	logs *syncbuf.Buffer
}

type harnessOptions struct {
	fake   *fakeprovider.Options
	limits Limits
	// config adds providers (their key variable is served by the fake's key).
	config *sandbox.Config
	// noDaemon gives sandboxes no in-sandbox daemon (envd answers 502).
	noDaemon bool
	// requestTimeout is the platform's request timeout (0: the SDK's).
	requestTimeout time.Duration
	// transport wraps the fake's in-process round tripper.
	transport func(http.RoundTripper) http.RoundTripper
	// unresolved: the test leaves sandboxes the server could not destroy,
	// so Shutdown reports them.
	unresolved bool
	// now is the server's clock (Deps.Now); nil: the system clock.
	now func() time.Time
	// ownOnly is Deps.OwnSandboxesOnly (HANDLE-6).
	ownOnly bool
}

func newHarness(t *testing.T, o *harnessOptions) *harness {
	t.Helper()
	if o == nil {
		o = &harnessOptions{}
	}
	fo := fakeprovider.Options{}
	if o.fake != nil {
		fo = *o.fake
	}
	if fo.NewDaemon == nil && !o.noDaemon {
		fo.NewDaemon = func(c fakeprovider.DaemonConfig) fakeprovider.Daemon {
			return fakeenvd.New(fakeenvd.Config{SandboxID: c.SandboxID, AccessToken: c.AccessToken, EnvVars: c.EnvVars})
		}
	}
	fo.Canaries = true // leak detectors in metadata, env, domain and error messages
	fp := fakeprovider.New(&fo)
	t.Cleanup(fp.Close)
	// The fake's own wiring, plus a second provider's key for the
	// provider:id routing tests.
	opts := fp.PlatformOptions()
	env := fp.PlatformEnv()
	env["OTHER_API_KEY"] = fp.APIKey()
	opts.Getenv = func(k string) string { return env[k] }
	if o.transport != nil {
		opts.HTTPClient = &http.Client{Transport: o.transport(fp.RoundTripper())}
	}
	opts.Config, opts.RequestTimeout = o.config, o.requestTimeout
	p, err := sandbox.NewPlatform(opts)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncbuf.Buffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := New(&Deps{Platform: p, Logger: logger, Limits: o.limits, Now: o.now, OwnSandboxesOnly: o.ownOnly, Secrets: SecretsFromEnv(p, func(k string) string { return env[k] })}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, fp: fp, srv: srv, logs: logs}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil && !o.unresolved {
			t.Errorf("Shutdown: %v", err)
		}
		// ERR-3, META-4: no log line carries a canary, the API key, or a URL.
		if c, ok := fp.FindCanary(logs.String()); ok {
			t.Errorf("logs leak %q", c)
		}
		if strings.Contains(logs.String(), "sandboxkit.test") || strings.Contains(logs.String(), "https://") {
			t.Errorf("logs contain a URL or domain:\n%s", logs.String())
		}
	})
	return h
}

// client is one MCP session on the harness's server.
type client struct {
	h    *harness
	cs   *mcp.ClientSession
	ss   *mcp.ServerSession
	pipe net.Conn // the client's end of the connection
}

// connect opens a session over in-memory transports.
func (h *harness) connect() *client {
	h.t.Helper()
	ctx := context.Background()
	// Like mcp.NewInMemoryTransports, with a handle on the client's end so
	// that a test can drop the connection as a dying client would.
	serverEnd, clientEnd := net.Pipe()
	ss, err := h.srv.mcp.Connect(ctx, &mcp.IOTransport{Reader: serverEnd, Writer: serverEnd}, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil)
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: clientEnd, Writer: clientEnd}, &mcp.ClientSessionOptions{ProtocolVersion: testProtocolVersion})
	if err != nil {
		h.t.Fatal(err)
	}
	cl := &client{h: h, cs: cs, ss: ss, pipe: clientEnd}
	h.t.Cleanup(func() { _ = cs.Close() })
	return cl
}

// close ends the session from the client side and waits until its
// close-time cleanup has finished.
func (c *client) close() {
	c.h.t.Helper()
	_ = c.cs.Close()
	c.waitClosed()
}

// drop cuts the connection, as a client process that dies would (the
// server reads end of file), and waits until the cleanup has finished.
func (c *client) drop() {
	c.h.t.Helper()
	_ = c.pipe.Close()
	c.waitClosed()
}

func (c *client) waitClosed() {
	c.h.t.Helper()
	_ = c.ss.Wait()
	waitFor(c.h.t, "session record removed", func() bool {
		_, ok := c.h.srv.reg.lookup(c.ss)
		return !ok
	})
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := c.h.srv.reg.cleanups.wait(ctx); err != nil {
		c.h.t.Fatalf("cleanup: %v", err)
	}
}

// session returns the server-side state of the session.
func (c *client) session() *session {
	s, ok := c.h.srv.reg.lookup(c.ss)
	if !ok {
		c.h.t.Fatal("no session record")
	}
	return s
}

// call calls a tool with arguments (a map, or json.RawMessage for raw
// JSON) and fails the test on a protocol error. Every result is checked for
// leaks (META-4, ERR-3).
func (c *client) call(name string, args any) *mcp.CallToolResult {
	c.h.t.Helper()
	res, err := c.callErr(name, args)
	if err != nil {
		c.h.t.Fatalf("%s: protocol error: %v", name, err)
	}
	return res
}

func (c *client) callErr(name string, args any) (*mcp.CallToolResult, error) {
	c.h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if res != nil {
		text := resultJSON(c.h.t, res)
		if canary, ok := c.h.fp.FindCanary(text); ok {
			c.h.t.Errorf("%s: result leaks %q: %s", name, canary, text)
		}
		for _, bad := range []string{"sandboxkit.test", "https://", "http://", "envdAccessToken", "trafficAccessToken", "clientID", "goroutine "} {
			if strings.Contains(text, bad) {
				c.h.t.Errorf("%s: result contains %q: %s", name, bad, text)
			}
		}
		checkTextMatchesStructured(c.h.t, name, res)
	}
	return res, err
}

// ok calls a tool that must succeed and returns its structured content.
func (c *client) ok(name string, args any) map[string]any {
	c.h.t.Helper()
	return c.success(name, args, c.call(name, args))
}

// success checks that res, the result of calling name with args, is a
// success and returns its structured content.
func (c *client) success(name string, args any, res *mcp.CallToolResult) map[string]any {
	c.h.t.Helper()
	if res.IsError {
		c.h.t.Fatalf("%s(%v): unexpected tool error %s", name, args, resultJSON(c.h.t, res))
	}
	m, ok := res.StructuredContent.(map[string]any)
	if !ok {
		c.h.t.Fatalf("%s: structuredContent is %T", name, res.StructuredContent)
	}
	validateOutput(c.h.t, c.h.srv, name, m)
	return m
}

// fail calls a tool that must fail with a tool error and returns the error.
func (c *client) fail(name string, args any) ToolError {
	c.h.t.Helper()
	res := c.call(name, args)
	return toolErrorOf(c.h.t, name, res)
}

func toolErrorOf(t *testing.T, name string, res *mcp.CallToolResult) ToolError {
	t.Helper()
	if !res.IsError {
		t.Fatalf("%s: want a tool error, got %s", name, resultJSON(t, res))
	}
	// ERR-2 / TOOLS-5: no structuredContent; the error object is the JSON
	// of the one text block.
	if res.StructuredContent != nil {
		t.Errorf("%s: tool error carries structuredContent: %s", name, resultJSON(t, res))
	}
	data := []byte(errorText(t, name, res))
	var env struct {
		Error *ToolError `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil || env.Error == nil {
		t.Fatalf("%s: error text block %s: %v", name, data, err)
	}
	var outer map[string]json.RawMessage
	_ = json.Unmarshal(data, &outer)
	if len(outer) != 1 {
		t.Errorf("%s: error text block has keys besides error: %s", name, data)
	}
	if env.Error.Category == "" || env.Error.Recovery == "" {
		t.Errorf("%s: error lacks category or recovery: %s", name, data)
	}
	known := false
	for _, c := range sandbox.Categories() {
		known = known || c == env.Error.Category
	}
	if !known {
		t.Errorf("%s: unknown category %q", name, env.Error.Category)
	}
	return *env.Error
}

// resultJSON is the whole result as the client got it.
func resultJSON(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// errorText returns the one text block of a tool error.
func errorText(t *testing.T, name string, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("%s: tool error has %d content blocks, want 1", name, len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("%s: tool error content is %T, want text", name, res.Content[0])
	}
	return tc.Text
}

// checkTextMatchesStructured: TOOLS-3, one text block with the same JSON as
// structuredContent; ERR-2, a tool error's one text block is JSON and it
// has no structuredContent.
func checkTextMatchesStructured(t *testing.T, name string, res *mcp.CallToolResult) {
	t.Helper()
	if len(res.Content) != 1 {
		t.Errorf("%s: %d content blocks, want 1", name, len(res.Content))
		return
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Errorf("%s: content is %T, want text", name, res.Content[0])
		return
	}
	var fromText, fromStructured any
	if err := json.Unmarshal([]byte(tc.Text), &fromText); err != nil {
		t.Errorf("%s: text block is not JSON: %v", name, err)
		return
	}
	if res.IsError {
		if res.StructuredContent != nil {
			t.Errorf("%s: tool error carries structuredContent (ERR-2, TOOLS-5)", name)
		}
		return
	}
	data, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(data, &fromStructured)
	if name == "download_file" {
		// TOOLS-3: an inline download's text leaves out data_base64, which
		// travels once, in structuredContent.
		if m, ok := fromStructured.(map[string]any); ok {
			if _, inText := fromText.(map[string]any)["data_base64"]; !inText {
				delete(m, "data_base64")
			}
		}
	}
	a, _ := json.Marshal(fromText)
	b, _ := json.Marshal(fromStructured)
	if !bytes.Equal(a, b) {
		t.Errorf("%s: text block %s differs from structuredContent %s", name, a, b)
	}
}

// validateOutput checks structuredContent against the tool's outputSchema
// (TOOLS-3).
func validateOutput(t *testing.T, srv *Server, name string, v map[string]any) {
	t.Helper()
	for _, tool := range srv.tools {
		if tool.Name() != name {
			continue
		}
		r, err := tool.Def.OutputSchema.(*jsonschema.Schema).Resolve(nil)
		if err != nil {
			t.Fatalf("%s: output schema: %v", name, err)
		}
		if err := r.Validate(v); err != nil {
			t.Errorf("%s: structuredContent does not match outputSchema: %v", name, err)
		}
		return
	}
	t.Fatalf("no tool %q", name)
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// hangGuard bounds the tests' waits. It only turns a hang into a failure:
// no test passes or fails on how long something took (CI may be busy).
const hangGuard = 2 * time.Minute

// journalFrom returns the journal entries after the first n.
func journalFrom(fp *fakeprovider.Provider, n int) []fakeprovider.Entry {
	e := fp.Journal().Entries()
	if n > len(e) {
		return nil
	}
	return e[n:]
}

// ops lists the Op of each entry.
func ops(entries []fakeprovider.Entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Op
	}
	return out
}
