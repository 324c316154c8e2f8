package sandbox

import (
	"bytes"
	"context"
	"io"
	"time"
)

// DefaultCommandTimeout bounds [Envd.Run] when [CommandOptions.Timeout] is zero.
const DefaultCommandTimeout = 60 * time.Second

// daemonGrace is how long after a command's timeout the daemon is told to
// end it, in case the client is no longer there to kill it.
const daemonGrace = 5 * time.Second

// killTimeout bounds the SIGKILL sent after a command outlives its timeout
// or its context.
const killTimeout = 10 * time.Second

// shell is how a command line is run, as in the E2B SDKs.
const shell = "/bin/bash"

func shellConfig(command, cwd string, envs map[string]string, stdin bool) *ProcessConfig {
	return &ProcessConfig{Cmd: shell, Args: []string{"-l", "-c", command}, Cwd: cwd, Envs: envs, Stdin: stdin}
}

// CommandOptions configures [Envd.Run] and [Envd.RunOutput]. The zero value
// (or nil) gives defaults.
type CommandOptions struct {
	// Cwd is the working directory; empty means the user's home.
	Cwd string
	// Envs are added to the sandbox's environment variables.
	Envs map[string]string
	// Timeout bounds the command; when it passes, the command is killed with
	// SIGKILL and the call fails with category timeout. Zero means
	// [DefaultCommandTimeout]; negative is invalid.
	Timeout time.Duration
	// Stdout and Stderr receive the command's output as it arrives, chunk by
	// chunk, so output of any size passes through without being held. Nil
	// discards the stream. They are called from the calling goroutine only.
	// A write error kills the command and fails the call with category
	// internal naming the field "stdout" or "stderr".
	Stdout io.Writer
	Stderr io.Writer
	// StartWithin, when positive and shorter than the platform's request
	// timeout, bounds the wait for the daemon to report the command's
	// start instead: a caller with a deadline of its own for its provider
	// requests (the reference server's per-call deadline) passes what is
	// left of it.
	StartWithin time.Duration
}

// CommandResult is how a finished command ended. A non-zero exit code is a
// result, not an error.
type CommandResult struct {
	ProcessExit
	// Pid is the process ID the command ran as.
	Pid uint32
	// StdoutBytes and StderrBytes count the output received.
	StdoutBytes int64
	StderrBytes int64
}

// CommandOutput is a [CommandResult] with the collected output.
type CommandOutput struct {
	CommandResult
	Stdout []byte
	Stderr []byte
}

// Run runs a shell command line ("/bin/bash -l -c <command>") to completion,
// passing its output to opts.Stdout and opts.Stderr as it arrives. A command
// that outlives opts.Timeout is killed (SIGKILL) and Run fails with category
// timeout; when ctx ends first the command is killed too and Run fails with
// category timeout (deadline) or unavailable (cancellation), and
// errors.Is(err, ctx.Err()) holds. The daemon is given the timeout plus a
// grace period as the stream's deadline, so that it ends the command
// itself should this client go away. The daemon must report the command's
// start within the platform's request timeout ([Options.RequestTimeout]);
// otherwise Run fails with category timeout at once.
//
// Operation: POST /process.Process/Start
func (e *Envd) Run(ctx context.Context, command string, opts *CommandOptions) (*CommandResult, error) {
	const op = OpProcessStart
	if opts == nil {
		opts = &CommandOptions{}
	}
	if command == "" {
		return nil, invalidArgument(op, "command")
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = DefaultCommandTimeout
	}
	if timeout < 0 {
		return nil, invalidArgument(op, "timeout")
	}
	stdout, stderr := opts.Stdout, opts.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}

	// runCtx decides: when it ends, the command is killed and Run fails.
	// The stream runs on its own context, cancelled when runCtx ends, whose
	// later deadline tells the daemon (Connect-Timeout-Ms) to end the
	// command itself should this client vanish; so the daemon never races
	// the client to end a command that is merely on time.
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	streamCtx, cancelStream := context.WithTimeout(context.WithoutCancel(ctx), timeout+daemonGrace)
	defer cancelStream()
	stop := context.AfterFunc(runCtx, cancelStream)
	defer stop()

	st, err := e.openStreamWithin(ctx, op, opts.StartWithin, cancelStream, func() (*ProcessStream, error) {
		return e.StartProcess(streamCtx, shellConfig(command, opts.Cwd, opts.Envs, false))
	})
	if err != nil {
		if ctxErr := runCtx.Err(); ctxErr != nil {
			return nil, transportError(op, ctxErr)
		}
		return nil, err
	}
	defer st.Close()

	res := &CommandResult{Pid: st.Pid()}
	var exit *ProcessExit
	for st.Receive() {
		ev := st.Event()
		if len(ev.Stdout) > 0 {
			if _, err := stdout.Write(ev.Stdout); err != nil {
				e.killAfter(ctx, st.Pid())
				return nil, &Error{Op: op, Category: Internal, Field: "stdout"}
			}
			res.StdoutBytes += int64(len(ev.Stdout))
		}
		if len(ev.Stderr) > 0 {
			if _, err := stderr.Write(ev.Stderr); err != nil {
				e.killAfter(ctx, st.Pid())
				return nil, &Error{Op: op, Category: Internal, Field: "stderr"}
			}
			res.StderrBytes += int64(len(ev.Stderr))
		}
		if ev.Exit != nil {
			exit = ev.Exit
		}
	}
	if exit != nil {
		res.ProcessExit = *exit
		return res, nil
	}
	err = st.Err()
	if ctxErr := runCtx.Err(); ctxErr != nil {
		err = transportError(op, ctxErr)
	}
	if CategoryOf(err) == Timeout || runCtx.Err() != nil {
		e.killAfter(ctx, st.Pid())
	}
	return nil, err
}

// RunOutput is [Envd.Run] collecting the output in memory; opts.Stdout and
// opts.Stderr are ignored. The output is not bounded: for commands whose
// output may be large, pass bounded writers to Run instead.
//
// Operation: POST /process.Process/Start
func (e *Envd) RunOutput(ctx context.Context, command string, opts *CommandOptions) (*CommandOutput, error) {
	var o CommandOptions
	if opts != nil {
		o = *opts
	}
	var stdout, stderr bytes.Buffer
	o.Stdout, o.Stderr = &stdout, &stderr
	res, err := e.Run(ctx, command, &o)
	if err != nil {
		return nil, err
	}
	return &CommandOutput{CommandResult: *res, Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}, nil
}

// killAfter sends SIGKILL to pid on a context that survives ctx's end, so
// that a command whose caller gave up does not keep running. Failures are
// ignored: the process may already be gone.
func (e *Envd) killAfter(ctx context.Context, pid uint32) {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(killTimeout, e.requestTimeout))
	defer cancel()
	_ = e.SendSignal(kctx, pid, SIGKILL)
}
