package server

import (
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// budgetDeadline is the provider deadline of the call-deadline tests: the
// platform's request timeout and the file timeout.
const budgetDeadline = 400 * time.Millisecond

func newBudgetHarness(t *testing.T) *harness {
	return newHarness(t, &harnessOptions{
		requestTimeout: budgetDeadline,
		limits:         Limits{FileTimeout: budgetDeadline},
	})
}

// A provider that holds a tool call's request until released: the call
// still answers, with a timeout tool error and no http_status, in both
// eras (ERR-1, ERR-2, the call's provider deadline of budget.go). The
// fault holds the request until the test releases it after the call, so
// only the server's deadline can end the call; the client's own context
// (callErr, 30 s) bounds the test, and nothing here measures time.
func TestCallDeadlineHeldProvider(t *testing.T) {
	for _, era := range []string{"legacy", "modern"} {
		for _, tc := range []struct {
			tool string
			op   string
			args func(id, cmd string) map[string]any
		}{
			{"start_background_command", sandbox.OpProcessStart, func(id, _ string) map[string]any {
				return map[string]any{"command": "echo x", "sandbox_id": id}
			}},
			{"get_background_command", sandbox.OpFilesDownload, func(_, cmd string) map[string]any {
				return map[string]any{"command_id": cmd}
			}},
			{"kill_background_command", sandbox.OpProcessList, func(_, cmd string) map[string]any {
				return map[string]any{"command_id": cmd}
			}},
			{"write_file", sandbox.OpFilesUpload, func(id, _ string) map[string]any {
				return map[string]any{"path": "/tmp/f", "content": "x", "sandbox_id": id}
			}},
			{"get_sandbox", sandbox.OpGetSandbox, func(id, _ string) map[string]any {
				return map[string]any{"sandbox_id": id}
			}},
		} {
			if era == "legacy" && (tc.tool == "get_background_command" || tc.tool == "kill_background_command") {
				continue // a session's command is read from the server's buffers
			}
			t.Run(era+"/"+tc.tool, func(t *testing.T) {
				h := newBudgetHarness(t)
				c := h.connect()
				if era == "modern" {
					c = h.connectModern()
				}
				id := c.ok("create_sandbox", nil)["sandbox_id"].(string)
				cmd := c.ok("start_background_command", map[string]any{"command": "sleep 60", "sandbox_id": id})["command_id"].(string)
				f := h.fp.InjectFault(fakeprovider.Fault{Op: tc.op, SandboxID: id, Hang: true})
				res, err := c.callErr(tc.tool, tc.args(id, cmd))
				f.Clear()
				f.Release()
				if err != nil {
					t.Fatalf("no answer within the test's bound: %v", err)
				}
				if !res.IsError {
					t.Fatalf("succeeded although the provider held the request: %s", resultJSON(t, res))
				}
				te := toolErrorOf(t, tc.tool, res)
				if te.Category != sandbox.Timeout || te.HTTPStatus != 0 {
					t.Errorf("got %+v, want category timeout without http_status", te)
				}
			})
		}
	}
}

// The provider deadline bounds a tool call's provider requests together,
// not each one: a modern get_background_command makes several requests in
// sequence (the command's principal, its exit status, its processes, its
// output), and with every one of them answered after 3/5 of the deadline
// (each alone in time) the call ends in a timeout tool error. With one
// deadline per request it would succeed. Nothing here measures time: two
// delays of 3/5 of the deadline exceed it on any machine.
func TestCallDeadlineSharedAcrossRequests(t *testing.T) {
	h := newBudgetHarness(t)
	c := h.connectModern()
	id := c.ok("create_sandbox", nil)["sandbox_id"].(string)
	cmd := c.ok("start_background_command", map[string]any{"command": "sleep 60", "sandbox_id": id})["command_id"].(string)
	f := h.fp.InjectFault(fakeprovider.Fault{SandboxID: id, Delay: budgetDeadline * 3 / 5})
	res, err := c.callErr("get_background_command", map[string]any{"command_id": cmd})
	f.Clear()
	if err != nil {
		t.Fatalf("no answer within the test's bound: %v", err)
	}
	if !res.IsError {
		t.Fatalf("succeeded after several requests of 3/5 of the deadline each: %s", resultJSON(t, res))
	}
	if te := toolErrorOf(t, "get_background_command", res); te.Category != sandbox.Timeout {
		t.Errorf("got %+v, want category timeout", te)
	}
	// The deadline was the call's, not the sandbox's: the next call works.
	c.ok("get_background_command", map[string]any{"command_id": cmd})
}

// A step with a bound of its own runs outside the call's provider
// deadline: a command may run past it (EXEC-1), and the renewal after it
// still has what was left.
func TestCallDeadlineSparesCommands(t *testing.T) {
	h := newBudgetHarness(t)
	for _, era := range []string{"legacy", "modern"} {
		c := h.connect()
		if era == "modern" {
			c = h.connectModern()
		}
		id := c.ok("create_sandbox", nil)["sandbox_id"].(string)
		// The fake's shell sleeps in real time: one second is more than
		// twice the provider deadline.
		out := c.ok("run_command", map[string]any{"command": "sleep 1; echo done", "sandbox_id": id})
		if out["stdout"] != "done\n" {
			t.Errorf("%s: a command longer than the provider deadline: %v", era, out)
		}
		// A background command outlives the call that started it, and its
		// deadline: the daemon ends a process at its stream's deadline.
		cmd := c.ok("start_background_command", map[string]any{"command": "sleep 1; echo done", "sandbox_id": id})["command_id"].(string)
		var got map[string]any
		waitFor(t, "the background command's end", func() bool {
			got = c.ok("get_background_command", map[string]any{"command_id": cmd})
			return got["running"] == false
		})
		if got["exit_code"] != 0.0 || got["stdout"] != "done\n" {
			t.Errorf("%s: a background command longer than the provider deadline ended with %v, want exit 0 and its output", era, got)
		}
	}
}

// A command's start is provider work within the call's deadline, though
// its run is not: with the connect to an external sandbox and the start
// each answered after 3/5 of the deadline (each alone in time), run_command
// ends in a timeout tool error, not in the command's result.
func TestCallDeadlineBoundsCommandStart(t *testing.T) {
	h := newBudgetHarness(t)
	owner := h.connect()
	id := owner.ok("create_sandbox", nil)["sandbox_id"].(string)
	c := h.connect() // the sandbox is external to this session: reached by connect
	f := h.fp.InjectFault(fakeprovider.Fault{SandboxID: id, Delay: budgetDeadline * 3 / 5})
	res, err := c.callErr("run_command", map[string]any{"command": "echo hi", "sandbox_id": id})
	f.Clear()
	if err != nil {
		t.Fatalf("no answer within the test's bound: %v", err)
	}
	if !res.IsError {
		t.Fatalf("succeeded after a connect and a start of 3/5 of the deadline each: %s", resultJSON(t, res))
	}
	if te := toolErrorOf(t, "run_command", res); te.Category != sandbox.Timeout || te.Code == codeCommandTimeout {
		t.Errorf("got %+v, want a provider timeout (not the command's)", te)
	}
}
