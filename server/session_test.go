package server

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// deletes returns the sandbox IDs of the kill requests after n.
func deletes(fp *fakeprovider.Provider, n int) []string {
	var out []string
	for _, e := range journalFrom(fp, n) {
		if e.Op == sandbox.OpKillSandbox {
			out = append(out, e.SandboxID)
		}
	}
	slices.Sort(out)
	return out
}

func TestSessionCleanup(t *testing.T) {
	h := newHarness(t, nil)
	ext := h.fp.AddSandbox(fakeprovider.SandboxSeed{})
	a, b := h.connect(), h.connect()
	a1 := a.ok("create_sandbox", nil)["sandbox_id"].(string)
	a.ok("run_command", map[string]any{"command": "true"}) // uses a1
	a2 := a.ok("create_sandbox", map[string]any{"timeout": 60})["sandbox_id"].(string)
	b1 := b.ok("create_sandbox", nil)["sandbox_id"].(string)
	// A touches the external sandbox in every way that must not adopt it.
	a.ok("get_sandbox", map[string]any{"sandbox_id": ext})
	a.ok("set_sandbox_timeout", map[string]any{"sandbox_id": ext, "timeout": 600})
	a.ok("run_command", map[string]any{"sandbox_id": ext, "command": "true"})
	a.ok("list_sandboxes", nil)
	// A's default is a2; B's sandbox is foreign to A but not external-killed.
	a.ok("get_sandbox", map[string]any{"sandbox_id": b1})

	n := h.fp.Journal().Len()
	t.Run("SESSION-1 closing A destroys A's sandboxes only", func(t *testing.T) {
		a.close()
		if got, want := deletes(h.fp, n), sortedIDs(a1, a2); !slices.Equal(got, want) {
			t.Errorf("destroyed %v, want %v", got, want)
		}
		for _, id := range []string{b1, ext} {
			if _, ok := h.fp.Sandbox(id); !ok {
				t.Errorf("%s destroyed", id)
			}
		}
	})
	t.Run("idempotent", func(t *testing.T) {
		n := h.fp.Journal().Len()
		sess := b.session()
		h.srv.reg.end(sess)
		h.srv.reg.end(sess)
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		if err := h.srv.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if err := h.srv.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if got := deletes(h.fp, n); !slices.Equal(got, []string{b1}) {
			t.Errorf("destroyed %v, want [%s]", got, b1)
		}
		if _, ok := h.fp.Sandbox(ext); !ok {
			t.Error("external destroyed at shutdown")
		}
	})
	t.Run("after shutdown sessions are closed from the outset", func(t *testing.T) {
		n := h.fp.Journal().Len()
		c := h.connect()
		te := c.fail("run_command", map[string]any{"command": "true"})
		if te.Code != codeSessionClosed {
			t.Errorf("error %+v", te)
		}
		if got := journalFrom(h.fp, n); len(got) != 0 {
			t.Errorf("requests %v", ops(got))
		}
	})
}

func sortedIDs(ids ...string) []string {
	s := slices.Clone(ids)
	slices.Sort(s)
	return s
}

// TestCleanupBounded checks DestroyConcurrency: with destroys held until
// Release (and a DestroyTimeout no test outlives), exactly two are in
// flight and no other kill request was sent; the rest follow on Release.
func TestCleanupBounded(t *testing.T) {
	h := newHarness(t, &harnessOptions{limits: Limits{DestroyConcurrency: 2, DestroyTimeout: time.Hour}, noDaemon: true})
	c := h.connect()
	for range 6 {
		c.ok("create_sandbox", nil)
	}
	hang := h.fp.InjectFault(fakeprovider.Fault{Op: sandbox.OpKillSandbox, Hang: true})
	_ = c.cs.Close()
	waitFor(t, "two destroys in flight", func() bool { return hang.InFlight() >= 2 })
	// A third destroy beside the held two would break the bound; with both
	// held until Release, none may have been sent or answered.
	if got, sent, live := hang.InFlight(), h.fp.Journal().Count(sandbox.OpKillSandbox), h.fp.LiveCount(); got != 2 || sent != 2 || live != 6 {
		t.Errorf("%d destroys in flight, %d sent, %d sandboxes alive; want the bound 2, 2, 6", got, sent, live)
	}
	hang.Release()
	c.close()
	if got := h.fp.LiveCount(); got != 0 {
		t.Errorf("%d sandboxes alive after Release", got)
	}
}

// TestCleanupBoundedAndTimed checks DestroyTimeout: the held destroys give
// up and are retried after a backoff, the rest run meanwhile. The hang is
// released only after cleanup ended, so only DestroyTimeout can end it (a
// broken one hangs the close, which the hang guard turns into a failure).
func TestCleanupBoundedAndTimed(t *testing.T) {
	h := newHarness(t, &harnessOptions{limits: Limits{DestroyConcurrency: 2, DestroyTimeout: 300 * time.Millisecond}, noDaemon: true})
	c := h.connect()
	for range 6 {
		c.ok("create_sandbox", nil)
	}
	hang := h.fp.InjectFault(fakeprovider.Fault{Op: sandbox.OpKillSandbox, Hang: true, Times: 3})
	c.close() // waits for the cleanup, up to the hang guard
	hang.Release()
	if got := h.fp.LiveCount(); got != 0 {
		t.Errorf("%d sandboxes alive, want every one destroyed on retry", got)
	}
	if got := h.fp.Journal().Count(sandbox.OpKillSandbox); got != 9 {
		t.Errorf("%d destroy requests, want 6 plus 3 retries", got)
	}
	if !strings.Contains(h.logs.String(), "sandbox destroy failed; retrying") {
		t.Error("failed destroys not logged")
	}
	if u := h.srv.Unresolved(); len(u) != 0 {
		t.Errorf("unresolved %v", u)
	}
}

// TestCloseWhileSetTimeoutInFlight is TIMEOUT-5 with a client that goes
// away: the in-flight call neither restores nor rebuilds anything, and the
// sandbox sees no call after its close-time destroy.
func TestCloseWhileSetTimeoutInFlight(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect()
	id := c.ok("create_sandbox", map[string]any{"timeout": 120})["sandbox_id"].(string)
	sess := c.session()
	o, _ := sess.ownedByID(id)
	hang := h.fp.InjectFault(fakeprovider.Fault{Op: sandbox.OpSetTimeout, SandboxID: id, Hang: true})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = c.callErr("set_sandbox_timeout", map[string]any{"timeout": 900})
	}()
	waitFor(t, "set-timeout in flight", func() bool { return hang.Hits() == 1 })
	_ = c.pipe.Close() // the client dies
	// The close is seen at once, while the update is still held: the
	// record is cleared and the destroy goes out.
	waitFor(t, "session closed while the update is in flight", sess.isClosed)
	waitFor(t, "close-time destroy", func() bool { return h.fp.Journal().Count(sandbox.OpKillSandbox) == 1 })
	hang.Release()
	<-done
	c.waitClosed()
	if got := snapshotSession(sess); got != `default="" owned=[] commands=0 closed=true` {
		t.Errorf("session record rebuilt: %s", got)
	}
	if o.renewal != 120*time.Second {
		t.Errorf("renewal policy %v after close, want the old 120s", o.renewal)
	}
	if _, ok := h.srv.reg.lookup(c.ss); ok {
		t.Error("session record survived")
	}
	checkNothingAfterDestroy(t, h.fp, id)
}

// TestCloseDuringCompletedSetTimeout is TIMEOUT-5 where the platform update
// succeeds after the session closed (the destroy is held meanwhile).
func TestCloseDuringCompletedSetTimeout(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect()
	id := c.ok("create_sandbox", map[string]any{"timeout": 120})["sandbox_id"].(string)
	sess := c.session()
	o, _ := sess.ownedByID(id)
	holdSet := h.fp.InjectFault(fakeprovider.Fault{Op: sandbox.OpSetTimeout, SandboxID: id, Hang: true, Times: 1})
	holdKill := h.fp.InjectFault(fakeprovider.Fault{Op: sandbox.OpKillSandbox, SandboxID: id, Hang: true, Times: 1})
	tool := SetSandboxTimeout(h.srv.deps)
	a, verr := tool.validate(json.RawMessage(`{"timeout":900}`))
	if verr != nil {
		t.Fatal(verr)
	}
	type result struct {
		out any
		err error
	}
	done := make(chan result, 1)
	go func() {
		// Not bound to the session: the update runs to completion.
		out, err := tool.handler(context.Background(), sess, a)
		done <- result{out, err}
	}()
	waitFor(t, "set-timeout in flight", func() bool { return holdSet.Hits() == 1 })
	h.srv.reg.end(sess) // the session closes; its destroy is held
	waitFor(t, "destroy in flight", func() bool { return holdKill.Hits() == 1 })
	holdSet.Release()
	r := <-done
	if r.err != nil {
		t.Fatalf("the update itself should succeed: %v", r.err)
	}
	if o.renewal != 120*time.Second {
		t.Errorf("TIMEOUT-5: renewal policy became %v after close", o.renewal)
	}
	if got := snapshotSession(sess); got != `default="" owned=[] commands=0 closed=true` {
		t.Errorf("TIMEOUT-5: session record rebuilt: %s", got)
	}
	holdKill.Release()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := h.srv.reg.cleanups.wait(ctx); err != nil {
		t.Fatal(err)
	}
	// Later calls on the closed session make no request at all.
	n := h.fp.Journal().Len()
	for tool, args := range map[string]map[string]any{
		"get_sandbox":         {"sandbox_id": id},
		"set_sandbox_timeout": {"sandbox_id": id, "timeout": 60},
		"run_command":         {"sandbox_id": id, "command": "true"},
		"kill_sandbox":        {"sandbox_id": id},
		"create_sandbox":      {},
	} {
		if te := c.fail(tool, args); te.Code != codeSessionClosed {
			t.Errorf("%s after close: %+v", tool, te)
		}
	}
	if got := journalFrom(h.fp, n); len(got) != 0 {
		t.Errorf("calls after close made requests %v", ops(got))
	}
	checkNothingAfterDestroy(t, h.fp, id)
}

// checkNothingAfterDestroy: the close-time destroy is the last request that
// names the sandbox.
func checkNothingAfterDestroy(t *testing.T, fp *fakeprovider.Provider, id string) {
	t.Helper()
	entries := fp.Journal().ForSandbox(id)
	last := -1
	for i, e := range entries {
		if e.Op == sandbox.OpKillSandbox {
			last = i
		}
	}
	if last < 0 {
		t.Fatalf("no destroy of %s: %v", id, ops(entries))
	}
	if after := entries[last+1:]; len(after) != 0 {
		t.Errorf("TIMEOUT-5: requests after the destroy: %v", ops(after))
	}
}

func TestSessionStateAfterClose(t *testing.T) {
	s := newSession(1)
	o, ok := s.adopt("a", nil, time.Minute)
	if !ok {
		t.Fatal("adopt failed")
	}
	owned, _, first := s.close()
	if !first || len(owned) != 1 {
		t.Fatalf("close: %v %v", owned, first)
	}
	if _, _, again := s.close(); again {
		t.Error("second close reported first")
	}
	s.setRenewal("a", o, time.Hour)
	if o.renewal != time.Minute {
		t.Error("renewal changed after close")
	}
	if _, ok := s.renewalOf("a", o); ok {
		t.Error("renewal still applies after close")
	}
	if _, ok := s.adopt("b", nil, time.Minute); ok {
		t.Error("adopt after close")
	}
	if s.ctx.Err() == nil {
		t.Error("session context not cancelled")
	}
}

// TestCreateAfterClose: a create that completes after its session closed
// is destroyed at once and adopted by nobody.
func TestCreateAfterClose(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect()
	hold := h.fp.InjectFault(fakeprovider.Fault{Op: sandbox.OpCreateSandbox, Hang: true, Times: 1})
	done := make(chan error, 1)
	go func() {
		_, err := c.callErr("create_sandbox", nil)
		done <- err
	}()
	waitFor(t, "create in flight", func() bool { return hold.Hits() == 1 })
	h.srv.reg.end(c.session())
	hold.Release()
	<-done
	waitFor(t, "late sandbox destroyed", func() bool { return h.fp.LiveCount() == 0 && h.fp.Journal().Count(sandbox.OpKillSandbox) == 1 })
}

// rawTool adds a tool that bypasses our wrapper, to exercise the last line
// of defence.
func rawTool(srv *Server, name string, h mcp.ToolHandler) {
	srv.names[name] = true
	srv.mcp.AddTool(&mcp.Tool{Name: name, Description: "test", InputSchema: &jsonschema.Schema{Type: "object"}}, h)
}

func TestLastLineMiddleware(t *testing.T) {
	h := newHarness(t, nil)
	key := h.fp.APIKey()
	rawTool(h.srv, "boom", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		panic("secret " + key)
	})
	rawTool(h.srv, "stray", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("db password " + key + " rejected")
	})
	rawTool(h.srv, "nilres", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, nil
	})
	rawTool(h.srv, "leaky", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: "key=" + key}},
			StructuredContent: map[string]any{"key": key, "nested": []any{"x" + key + "y"}},
		}, nil
	})
	c := h.connect()
	for _, name := range []string{"boom", "stray", "nilres"} {
		res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name})
		if err != nil {
			t.Fatalf("%s: protocol error %v", name, err)
		}
		te := toolErrorOf(t, name, res)
		if te.Category != sandbox.Internal {
			t.Errorf("%s: %+v", name, te)
		}
		if s := resultJSON(t, res); strings.Contains(s, key) || strings.Contains(s, "secret") || strings.Contains(s, "password") {
			t.Errorf("%s leaks: %s", name, s)
		}
	}
	res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "leaky"})
	if err != nil {
		t.Fatal(err)
	}
	if s := resultJSON(t, res); strings.Contains(s, key) || strings.Count(s, redacted) != 3 {
		t.Errorf("not scrubbed: %s", s)
	}
	// The unknown-tool protocol error passes through.
	_, err = c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("unknown tool: %v, want a -32602 protocol error", err)
	}
	// The server keeps serving after a panic.
	c.ok("list_sandboxes", nil)
	if strings.Contains(h.logs.String(), key) {
		t.Error("logs contain the key")
	}
}

// TestLogs: one structured line per call with method, tool, duration and
// category; never arguments or results.
func TestLogs(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect()
	c.ok("write_file", map[string]any{"path": "/tmp/" + secretMark, "content": secretMark + "-content"})
	c.ok("read_file", map[string]any{"path": "/tmp/" + secretMark})
	c.fail("get_sandbox", map[string]any{"sandbox_id": "doesnotexist"})
	c.close()
	logs := h.logs.String()
	if strings.Contains(logs, secretMark) {
		t.Errorf("logs contain arguments or results:\n%s", logs)
	}
	var sawCategory, sawTool bool
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not JSON: %s", line)
		}
		if rec["msg"] == "mcp request" && rec["method"] == "tools/call" {
			if rec["tool"] == nil || rec["duration"] == nil {
				t.Errorf("line lacks tool or duration: %s", line)
			}
			sawTool = true
			if rec["category"] == "not_found" && rec["tool"] == "get_sandbox" {
				sawCategory = true
			}
		}
	}
	if !sawTool || !sawCategory {
		t.Errorf("missing call lines (tool %v, category %v):\n%s", sawTool, sawCategory, logs)
	}
}

// TestNoGoroutineLeaks: once sessions (in-memory, HTTP) have ended and the
// server has shut down, no goroutine of theirs is left: not the session
// watchers, not the destroys, not the background command readers.
func TestNoGoroutineLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Run("sessions", func(t *testing.T) {
		h := newHarness(t, nil)
		ts := serveHTTP(t, h, &HTTPOptions{SessionTimeout: time.Minute})
		a, b := h.connect(), h.connect()
		web := connectHTTP(t, h, ts.URL, httpClient(t, nil))
		for _, c := range []*client{a, b, web} {
			c.ok("create_sandbox", nil)
			c.ok("run_command", map[string]any{"command": "echo hi"})
			c.ok("start_background_command", map[string]any{"command": "sleep 30"})
		}
		a.close()
		b.drop()
		_ = web.cs.Close()
		waitFor(t, "every sandbox destroyed", func() bool { return h.fp.LiveCount() == 0 })
	})
	goleak.VerifyNone(t, ignore)
}
