package server

import (
	"context"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

// bgCommand is one background command of a session (BG-1..4): the SDK's
// process handle, which alone consumes the output into bounded buffers, and
// the sandbox it runs in, for renewal.
type bgCommand struct {
	id      string
	target  *reached
	process *sandbox.Process
}

// release stops consuming the command's output when its session closes.
// The process itself is not signalled: an owned sandbox is destroyed
// anyway, and an external one is not this session's to touch.
func (c *bgCommand) release() { _ = c.process.Close() }

// finished reports whether no more output will arrive.
func (c *bgCommand) finished() bool {
	select {
	case <-c.process.Done():
		return true
	default:
		return false
	}
}

// addCommand registers a started command in the session. It returns false
// when the session closed meanwhile (the caller must release the command)
// or when the session already keeps limit commands that are all running.
func (s *session) addCommand(c *bgCommand, limit int) (ok bool, full bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, false
	}
	if len(s.commands) >= limit {
		for id, old := range s.commands {
			if old.finished() {
				delete(s.commands, id)
			}
		}
	}
	if len(s.commands) >= limit {
		return false, true
	}
	s.commands[c.id] = c
	return true, false
}

// roomForCommand reports whether a new command could be registered.
func (s *session) roomForCommand(limit int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.commands) < limit {
		return true
	}
	for _, c := range s.commands {
		if c.finished() {
			return true
		}
	}
	return false
}

// command returns a command of this session only (BG-4).
func (s *session) command(id string) (*bgCommand, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.commands[id]
	return c, ok
}

// commandIDPattern: 64 random bits in a legacy session (BG-4: valid only
// there); in a modern request 128, and the sandbox it runs in (HANDLE-2:
// any replica finds it; see bgfile.go).
const commandIDPattern = `^bg-[0-9a-f]{16}([0-9a-f]{16}\.[A-Za-z0-9_-]{1,200})?$`

// commandStarted is start_background_command's result (BG-1).
func commandStarted(commandID, sandboxID string) any {
	return struct {
		CommandID string `json:"command_id"`
		SandboxID string `json:"sandbox_id"`
	}{commandID, sandboxID}
}

// cursorPattern is the form of next_cursor: bytes of stdout and stderr read.
const cursorPattern = `^[0-9]{1,18}\.[0-9]{1,18}$`

var cursorRE = regexp.MustCompile(cursorPattern)

func formatCursor(c sandbox.Cursor) string {
	return strconv.FormatInt(c.Stdout, 10) + "." + strconv.FormatInt(c.Stderr, 10)
}

func parseCursor(s string) (sandbox.Cursor, bool) {
	if !cursorRE.MatchString(s) {
		return sandbox.Cursor{}, false
	}
	o, e, _ := strings.Cut(s, ".")
	out, err1 := strconv.ParseInt(o, 10, 64)
	errn, err2 := strconv.ParseInt(e, 10, 64)
	if err1 != nil || err2 != nil {
		return sandbox.Cursor{}, false
	}
	return sandbox.Cursor{Stdout: out, Stderr: errn}, true
}

func unknownCommandError(sess *session) *ToolError {
	if sess.modern != nil {
		return &ToolError{Category: sandbox.NotFound, Code: codeUnknownCommand, Field: "command_id", Recovery: hintUnknownCmdModern}
	}
	return &ToolError{Category: sandbox.NotFound, Code: codeUnknownCommand, Field: "command_id", Recovery: hintUnknownCmd}
}

func commandIDArg() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: "The command_id returned by start_background_command: in a 2025 session, valid only in that session; from a 2026-07-28 request, valid for the same caller on any connection or replica.", Pattern: commandIDPattern}
}

// StartBackgroundCommand is start_background_command (BG-1): a command
// started in the sandbox, returning at once with a command_id.
func StartBackgroundCommand(deps *Deps) Tool {
	deps = deps.withDefaults()
	in := object("",
		req("command", str("Shell command line, run as \"/bin/bash -l -c <command>\".", maxShellCommandLen, "")),
		opt("cwd", str("Working directory. Default: the sandbox user's home.", maxPathLen, pathPattern)),
		opt("envs", envsArg("Environment variables for this command: names to string values.")),
		opt("sandbox_id", sandboxIDExecArg()),
	)
	out := object("",
		req("command_id", &jsonschema.Schema{Type: "string", Description: "Pass to get_background_command and kill_background_command: in the same 2025 session, or as the same caller in 2026-07-28 requests."}),
		req("sandbox_id", &jsonschema.Schema{Type: "string", Description: "The sandbox the command runs in."}),
	)
	def := &mcp.Tool{
		Name: "start_background_command",
		Description: "Start a shell command in a sandbox without waiting for it, and return its command_id at once. " +
			"Read its output with get_background_command and stop it with kill_background_command; the command_id is " +
			"valid only in the same 2025 session, or for the same caller in 2026-07-28 requests. In a 2025 session up to " + itoa(deps.Limits.BackgroundBufferBytes) + " bytes of each stream are kept; " +
			"a 2026-07-28 request's command keeps its whole output in files in the sandbox (under " + bgDirRoot + "). " +
			"sandbox_id is required in a 2026-07-28 request; in a 2025 session, without it the session's default sandbox is used, and one is created when there is none.",
		InputSchema:  in,
		OutputSchema: out,
		Annotations:  &mcp.ToolAnnotations{Title: "Start background command", ReadOnlyHint: false, DestructiveHint: ptr(true), IdempotentHint: false, OpenWorldHint: ptr(true)},
	}
	return newTool(def, dataPlane{
		check: func(sess *session, a args) error {
			if sess.modern != nil {
				return nil // its output lives in the sandbox, not here
			}
			if !sess.roomForCommand(deps.Limits.BackgroundCommands) {
				return &ToolError{Category: sandbox.RateLimited, Code: codeTooMany, Recovery: hintTooMany}
			}
			return nil
		},
		run: func(ctx context.Context, sess *session, r *reached, a args) (any, error) {
			if sess.modern != nil {
				// HANDLE-2: 128 random bits, bound to the principal, valid
				// on any replica.
				id, err := startFileCommand(ctx, sess.modern.principal, r, a)
				if err != nil {
					return nil, err
				}
				return commandStarted(id, r.id), nil
			}
			p, err := r.envd.StartBackground(ctx, a.str("command"), &sandbox.BackgroundOptions{
				Cwd:         a.str("cwd"),
				Envs:        a.strMap("envs"),
				BufferLimit: deps.Limits.BackgroundBufferBytes,
			})
			if err != nil {
				return nil, err
			}
			c := &bgCommand{id: "bg-" + randomHex(8), target: r, process: p}
			if ok, full := sess.addCommand(c, deps.Limits.BackgroundCommands); !ok {
				c.release()
				if full {
					return nil, &ToolError{Category: sandbox.RateLimited, Code: codeTooMany, Recovery: hintTooMany}
				}
				return nil, sessionClosedError()
			}
			return struct {
				CommandID string `json:"command_id"`
				SandboxID string `json:"sandbox_id"`
			}{c.id, r.id}, nil
		},
	}.handler(deps))
}

// GetBackgroundCommand is get_background_command (BG-2, BG-4): the output
// after a cursor and whether the command still runs.
func GetBackgroundCommand(deps *Deps) Tool {
	deps = deps.withDefaults()
	in := object("",
		req("command_id", commandIDArg()),
		opt("cursor", &jsonschema.Schema{Type: "string", Pattern: cursorPattern,
			Description: "The next_cursor of the previous read; only output not yet returned comes back. Default: the start of the output."}),
		opt("max_bytes", withDefault(integer("Most bytes of stdout and stderr together to return, 1 to "+itoa(deps.Limits.OutputBytes)+". Default "+itoa(deps.Limits.OutputBytes)+".", 1, deps.Limits.OutputBytes), deps.Limits.OutputBytes)),
	)
	out := object("",
		req("running", &jsonschema.Schema{Type: "boolean"}),
		req("exit_code", nullable("integer", "Exit status once the command ended; null while it runs.")),
		req("stdout", &jsonschema.Schema{Type: "string"}),
		req("stderr", &jsonschema.Schema{Type: "string"}),
		req("next_cursor", &jsonschema.Schema{Type: "string", Description: "Pass as cursor to read on."}),
		req("truncated", &jsonschema.Schema{Type: "boolean", Description: "True when more output is waiting after next_cursor, or when output older than the buffer was dropped."}),
	)
	def := &mcp.Tool{
		Name: "get_background_command",
		Description: "Read a background command's output from cursor on, and whether it still runs. Reading from the " +
			"returned next_cursor gives only output not yet returned, so no byte is lost or repeated (unless older output " +
			"overflowed the buffer, which sets truncated). exit_code is null while the command runs. An unknown " +
			"command_id, or one from another session or caller, is a not_found error.",
		InputSchema:  in,
		OutputSchema: out,
		Annotations:  &mcp.ToolAnnotations{Title: "Get background command", ReadOnlyHint: true, DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(true)},
	}
	return newTool(def, func(ctx context.Context, sess *session, a args) (any, error) {
		var cur sandbox.Cursor
		if a.has("cursor") {
			var ok bool
			if cur, ok = parseCursor(a.str("cursor")); !ok {
				return nil, invalidField("cursor")
			}
		}
		maxBytes := int(a.integer("max_bytes", int64(deps.Limits.OutputBytes)))
		if sess.modern != nil {
			fc, r, err := reachFileCommand(ctx, deps, sess.modern.principal, a.str("command_id")) // HANDLE-1..3
			if err != nil {
				return nil, err
			}
			return renewed(ctx, deps, sess, r, func() (any, error) { return fc.read(ctx, r, cur, maxBytes) })
		}
		c, ok := sess.command(a.str("command_id"))
		if !ok {
			return nil, unknownCommandError(sess) // BG-4
		}
		return renewed(ctx, deps, sess, c.target, func() (any, error) {
			o, err := c.process.ReadOutput(cur, maxBytes)
			if err != nil {
				return nil, toFieldError(err, "cursor")
			}
			var exit *int
			if o.Exit != nil {
				code := o.Exit.ExitCode
				exit = &code
			}
			return backgroundOutput{
				// The SDK may still report Running for a moment after the end
				// event arrived; the end event is the last, so it is over.
				o.Running && o.Exit == nil,
				exit, string(o.Stdout), string(o.Stderr), formatCursor(o.Next), o.More || o.Dropped,
			}, nil
		})
	})
}

// toFieldError keeps an SDK validation error's category but names the
// tool's own argument.
func toFieldError(err error, field string) error {
	if sandbox.CategoryOf(err) == sandbox.InvalidArgument {
		return invalidField(field)
	}
	return err
}

// KillBackgroundCommand is kill_background_command (BG-3, BG-4): a signal
// to a background command of this session (or, in 2026-07-28 requests, of this caller).
func KillBackgroundCommand(deps *Deps) Tool {
	deps = deps.withDefaults()
	in := object("",
		req("command_id", commandIDArg()),
		opt("signal", withDefault(enum("Signal to send. Default SIGTERM.", "SIGTERM", "SIGKILL"), "SIGTERM")),
	)
	out := object("",
		req("success", &jsonschema.Schema{Type: "boolean", Const: ptr[any](true)}),
	)
	def := &mcp.Tool{
		Name: "kill_background_command",
		Description: "Send SIGTERM (default) or SIGKILL to a background command of this session (or, in 2026-07-28 requests, of this caller). Its output stays " +
			"readable with get_background_command. An unknown command_id, or one from another session or caller, is a not_found error.",
		InputSchema:  in,
		OutputSchema: out,
		Annotations:  &mcp.ToolAnnotations{Title: "Kill background command", ReadOnlyHint: false, DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(true)},
	}
	return newTool(def, func(ctx context.Context, sess *session, a args) (any, error) {
		sig := sandbox.SIGTERM
		if a.str("signal") == string(sandbox.SIGKILL) {
			sig = sandbox.SIGKILL
		}
		if sess.modern != nil {
			fc, r, err := reachFileCommand(ctx, deps, sess.modern.principal, a.str("command_id")) // HANDLE-1..3
			if err != nil {
				return nil, err
			}
			return renewed(ctx, deps, sess, r, func() (any, error) {
				if err := fc.kill(ctx, r, sig); err != nil {
					return nil, err
				}
				return struct {
					Success bool `json:"success"`
				}{true}, nil
			})
		}
		c, ok := sess.command(a.str("command_id"))
		if !ok {
			return nil, unknownCommandError(sess) // BG-3, BG-4
		}
		return renewed(ctx, deps, sess, c.target, func() (any, error) {
			if !c.finished() {
				if err := c.process.Kill(ctx, sig); err != nil {
					return nil, err
				}
			}
			return struct {
				Success bool `json:"success"`
			}{true}, nil
		})
	})
}
