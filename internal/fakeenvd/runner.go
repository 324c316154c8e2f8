package fakeenvd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// A Runner starts the processes of a [Daemon]: the in-memory shell by
// default, or real host processes in the OS backend ([NewOS]).
type Runner interface {
	// Start launches spec. The process's output goes to spec.Stdout and
	// spec.Stderr (a terminal's only to spec.Stdout) until Wait returns.
	Start(ctx context.Context, spec ProcSpec) (Proc, error)
}

// ProcSpec is one process to start, as envd's Start request describes it
// once the daemon has resolved the user, directory and environment.
type ProcSpec struct {
	// Argv is the command and its arguments.
	Argv []string
	// Dir is the absolute working directory.
	Dir string
	// Env is the whole environment, "KEY=value", later entries win.
	Env []string
	// User, UID, GID and Home are the account the process runs as.
	User     string
	UID, GID int
	Home     string
	// Stdin keeps standard input open for SendInput; otherwise the process
	// reads EOF at once. A terminal always has input.
	Stdin bool
	// PTY, when not nil, runs the process on a terminal of that size.
	PTY *envdapi.PTYSize
	// Stdout and Stderr receive the output (a terminal's goes to Stdout).
	Stdout, Stderr io.Writer
}

// A Proc is a process a [Runner] started.
type Proc interface {
	// Pid is the process id, or 0 to let the daemon number it.
	Pid() uint32
	// Stdin is the write end of standard input (or of the terminal), nil
	// when input is off. The daemon owns and closes it.
	Stdin() *os.File
	// Signal delivers SIGKILL or SIGTERM.
	Signal(sig syscall.Signal) error
	// Resize changes the terminal's size.
	Resize(size envdapi.PTYSize) error
	// Wait blocks until the process ended and its output was written. code
	// is the exit status; cause, when the process was stopped by a signal,
	// is a killSignal naming it.
	Wait() (code int, cause error)
}

// errNoTerminal is Resize on a process started without a PTY.
var errNoTerminal = errors.New("tty not assigned to process")

// memRunner runs processes in the daemon's in-memory shell.
type memRunner struct{ d *Daemon }

// memProc is a command line running in the in-memory shell.
type memProc struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	stdinR *os.File
	stdinW *os.File
	pty    *ptyState // nil unless started with a terminal
	done   chan struct{}
	code   int
}

// Start runs spec's command line in a fresh interpreter of the shell.
func (r memRunner) Start(ctx context.Context, spec ProcSpec) (Proc, error) {
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("fakeenvd: stdin pipe: %w", err)
	}
	if !spec.Stdin && spec.PTY == nil {
		stdinW.Close()
		stdinW = nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	p := &memProc{ctx: ctx, cancel: cancel, stdinR: stdinR, stdinW: stdinW, done: make(chan struct{})}
	if spec.PTY != nil {
		p.pty = &ptyState{size: *spec.PTY}
	}
	sh := r.d.shellFor(account{name: spec.User, uid: spec.UID, gid: spec.GID, home: spec.Home})
	go p.run(sh, spec)
	return p, nil
}

// run executes the command line and records its exit status.
func (p *memProc) run(sh *shell, spec ProcSpec) {
	defer close(p.done)
	defer p.stdinR.Close()
	line, err := commandLine(spec.Argv)
	switch {
	case err != nil:
		fmt.Fprintf(spec.Stderr, "bash: %v\n", err)
		p.code = 126
	case p.pty != nil:
		// The SDK's Pty.create starts "/bin/bash -i -l" (index.mjs:4279-4280):
		// every terminal runs the interactive shell.
		inv := sh.rootInvocation(spec.Dir, spec.Env, nil, spec.Stdout, spec.Stdout)
		p.code = sh.runInteractive(p.ctx, inv, p.stdinR, p.pty.get)
	default:
		inv := sh.rootInvocation(spec.Dir, spec.Env, p.stdinR, spec.Stdout, spec.Stderr)
		p.code = sh.runScript(p.ctx, inv, script{src: line, name: "bash"})
	}
}

func (p *memProc) Pid() uint32     { return 0 }
func (p *memProc) Stdin() *os.File { return p.stdinW }

// Signal stops the shell between statements; built-ins watch the context.
func (p *memProc) Signal(sig syscall.Signal) error {
	p.cancel(killSignal(sig))
	return nil
}

func (p *memProc) Resize(size envdapi.PTYSize) error {
	if p.pty == nil {
		return errNoTerminal
	}
	p.pty.resize(size)
	return nil
}

// Wait returns the exit status and the signal (or the daemon's closing)
// that stopped the shell, if any.
func (p *memProc) Wait() (int, error) {
	<-p.done
	cause := context.Cause(p.ctx)
	p.cancel(nil)
	return p.code, cause
}
