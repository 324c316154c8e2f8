package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/internal/toolset"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// Bounds of the execution tools.
const (
	defaultCommandTimeout = 60 // seconds (EXEC-1)
	// maxShellCommandLen keeps "bash -l -c <command>" within Linux's limit
	// on one argument (128 KiB) whatever the characters' UTF-8 length.
	maxShellCommandLen = 32000
	maxCodeLen         = 1 << 20
	pathPattern        = `^[^\x00]+$`
)

// execResult is the result of run_command and run_code (EXEC-1, EXEC-2).
type execResult struct {
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	ExitCode  int    `json:"exit_code"`
	Truncated bool   `json:"truncated"`
}

func execOutputSchema(limit int) *jsonschema.Schema {
	return object("",
		req("stdout", &jsonschema.Schema{Type: "string", Description: "Standard output; beyond " + itoa(limit) + " bytes the middle is cut and head and tail are kept."}),
		req("stderr", &jsonschema.Schema{Type: "string", Description: "Standard error, capped the same way."}),
		req("exit_code", &jsonschema.Schema{Type: "integer", Description: "Exit status; non-zero is a result, not an error. -1 when ended by a signal."}),
		req("truncated", &jsonschema.Schema{Type: "boolean", Description: "True when stdout or stderr was cut."}),
	)
}

func commandTimeoutArg() *jsonschema.Schema {
	return withDefault(integer("Seconds the command may run, 1 to "+itoa(maxCommandTimeout)+"; after that it is killed and the call fails with category timeout. Default "+itoa(defaultCommandTimeout)+".", 1, maxCommandTimeout), defaultCommandTimeout)
}

func sandboxIDExecArg() *jsonschema.Schema {
	return sandboxIDArg("The sandbox, bare or as provider:id. Required in a 2026-07-28 request; in a 2025 session, defaults to the session's default sandbox, created (template \"" + sandbox.DefaultTemplate + "\") when there is none.")
}

// runShell runs a command line on the reached sandbox with capped output,
// in the tool's [dataPlane], which renews an owned sandbox after it (RENEW-1).
func runShell(ctx context.Context, d *Deps, sess *session, r *reached, command string, opts sandbox.CommandOptions) (*execResult, error) {
	stdout, stderr := newHeadTail(d.Limits.OutputBytes), newHeadTail(d.Limits.OutputBytes)
	opts.Stdout, opts.Stderr = stdout, stderr
	// The start is provider work within the call's deadline (budget.go);
	// the run is bounded by the command's timeout alone (EXEC-1).
	opts.StartWithin = startWithin(ctx)
	res, err := r.envd.Run(ctx, command, &opts)
	if err != nil {
		var se *sandbox.Error
		if errors.As(err, &se) && se.Category == sandbox.Timeout && se.HTTPStatus == 0 &&
			errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			// EXEC-1: the command outlived its timeout and was killed (a
			// daemon's 504 is a provider timeout, reported as such).
			return nil, &ToolError{Category: sandbox.Timeout, Code: codeCommandTimeout, Field: "timeout", Recovery: hintCmdTimeout}
		}
		return nil, err
	}
	return &execResult{
		Stdout:    stdout.String(),
		Stderr:    stderr.String(),
		ExitCode:  res.ExitCode,
		Truncated: stdout.truncated() || stderr.truncated(), // EXEC-3
	}, nil
}

// RunCommand is run_command (EXEC-1, EXEC-3): a shell command line run to
// completion in the sandbox.
func RunCommand(deps *Deps) Tool {
	deps = deps.withDefaults()
	in := object("",
		req("command", str("Shell command line, run as \"/bin/bash -l -c <command>\".", maxShellCommandLen, "")),
		opt("cwd", str("Working directory. Default: the sandbox user's home.", maxPathLen, pathPattern)),
		opt("envs", envsArg("Environment variables for this command: names to string values.")),
		opt("timeout", commandTimeoutArg()),
		opt("sandbox_id", sandboxIDExecArg()),
	)
	def := &mcp.Tool{
		Name: toolset.RunCommand,
		Description: "Run a shell command in a sandbox and wait for it to finish. Returns stdout, stderr, exit_code and " +
			"truncated; a non-zero exit code is a result, not an error. Each stream is capped at " + itoa(deps.Limits.OutputBytes) +
			" bytes: beyond that the middle is cut and the head and tail are kept. A command that outlives timeout is killed " +
			"and the call fails with category timeout; for long-running commands use start_background_command. Without " +
			"sandbox_id the session's default sandbox is used (2025 sessions only; a 2026-07-28 request must pass sandbox_id), and one is created when there is none.",
		InputSchema:  in,
		OutputSchema: execOutputSchema(deps.Limits.OutputBytes),
	}
	return newTool(def, dataPlane{
		command: true, // EXEC-1: bounded by its timeout
		run: func(ctx context.Context, sess *session, r *reached, a args) (any, error) {
			return runShell(ctx, deps, sess, r, a.str("command"), sandbox.CommandOptions{
				Cwd:     a.str("cwd"),
				Envs:    a.strMap("envs"),
				Timeout: time.Duration(a.integer("timeout", defaultCommandTimeout)) * time.Second,
			})
		},
	}.handler(deps))
}

// interpreter returns the program that runs a file of run_code's language,
// and the file's extension.
func interpreter(lang string) (program, ext string, ok bool) {
	switch lang {
	case "python":
		return "python3", ".py", true
	case "javascript":
		return "node", ".js", true
	case "bash":
		return "bash", ".sh", true
	}
	return "", "", false
}

// codeInterpreter is interpreter for run_code's language argument, python
// when absent.
func codeInterpreter(a args) (program, ext string, ok bool) {
	lang := a.str("language")
	if lang == "" {
		lang = "python"
	}
	return interpreter(lang)
}

// RunCode is run_code (EXEC-2): a snippet of Python, JavaScript or Bash,
// written to a temporary file in the sandbox and run with its interpreter.
func RunCode(deps *Deps) Tool {
	deps = deps.withDefaults()
	in := object("",
		req("code", str("The program's source code.", maxCodeLen, "")),
		opt("language", withDefault(enum("Language of code. Default python.", "python", "javascript", "bash"), "python")),
		opt("timeout", commandTimeoutArg()),
		opt("sandbox_id", sandboxIDExecArg()),
	)
	def := &mcp.Tool{
		Name: toolset.RunCode,
		Description: "Run a Python (python3), JavaScript (node) or Bash program in a sandbox and wait for it to finish. " +
			"Returns stdout, stderr, exit_code and truncated, like run_command, with the same output cap and timeout. " +
			"The interpreter must exist in the sandbox's template. A 2026-07-28 request must pass sandbox_id; in a 2025 session, without it the session's default sandbox is" +
			"used, and one is created when there is none.",
		InputSchema:  in,
		OutputSchema: execOutputSchema(deps.Limits.OutputBytes),
	}
	return newTool(def, dataPlane{
		command: true, // EXEC-2: bounded by its timeout, its file by FileTimeout
		check: func(_ *session, a args) error {
			if _, _, ok := codeInterpreter(a); !ok {
				return invalidField("language")
			}
			return nil
		},
		run: func(ctx context.Context, sess *session, r *reached, a args) (any, error) {
			program, ext, _ := codeInterpreter(a) // checked before the sandbox was reached
			file := "/tmp/sandboxkit-code-" + randomHex(8) + ext
			fctx, cancel := fileContext(ctx, deps)
			_, err := r.envd.WriteText(fctx, file, a.str("code"))
			cancel()
			if err != nil {
				return nil, err
			}
			command := program + " " + file + "; __sbk_rc=$?; rm -f " + file + "; exit $__sbk_rc"
			return runShell(ctx, deps, sess, r, command, sandbox.CommandOptions{
				Timeout: time.Duration(a.integer("timeout", defaultCommandTimeout)) * time.Second,
			})
		},
	}.handler(deps))
}

// randomHex returns n random bytes as 2n hex digits.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
