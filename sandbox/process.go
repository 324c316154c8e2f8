package sandbox

import (
	"context"
	"maps"
	"slices"

	"connectrpc.com/connect"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// Signal is a signal the daemon can deliver to a process.
type Signal string

// The signals the daemon supports.
const (
	SIGTERM Signal = "SIGTERM"
	SIGKILL Signal = "SIGKILL"
)

// wire converts the signal to the daemon's enum; ok is false for any other value.
func (s Signal) wire() (envdapi.Signal, bool) {
	switch s {
	case SIGTERM:
		return envdapi.SignalSIGTERM, true
	case SIGKILL:
		return envdapi.SignalSIGKILL, true
	}
	return envdapi.SignalUnspecified, false
}

// ProcessConfig describes a process for [Envd.StartProcess]. The command is
// run as given; [Envd.Run] and [Envd.StartBackground] wrap a shell command
// line in "/bin/bash -l -c".
type ProcessConfig struct {
	// Cmd is the program to run; required.
	Cmd string
	// Args are its arguments, without the program name.
	Args []string
	// Envs are added to the sandbox's environment variables.
	Envs map[string]string
	// Cwd is the working directory; empty means the user's home. A relative
	// directory resolves against the home on the daemon side.
	Cwd string
	// Stdin keeps the process's standard input open for [Envd.SendInput]
	// until [Envd.CloseStdin]; when false it is closed at once.
	Stdin bool
	// Tag names the process so that it can be found by [Envd.ListProcesses].
	Tag string
}

// ProcessInfo describes a process the daemon is running.
type ProcessInfo struct {
	Pid  uint32
	Tag  string
	Cmd  string
	Args []string
	Envs map[string]string
	Cwd  string
}

// ProcessExit is how a process ended.
type ProcessExit struct {
	// ExitCode is the process's exit status; it is -1 (or another
	// daemon-chosen value) when the process was ended by a signal.
	ExitCode int
	// Exited is true when the process exited by itself rather than by a signal.
	Exited bool
	// Status is the daemon's short description, such as "exit status 1"
	// or "signal: killed".
	Status string
}

// ProcessEvent is one event of a [ProcessStream]: a chunk of output on one
// or both streams, or the process's end. Keepalive events are never shown.
type ProcessEvent struct {
	Stdout []byte
	Stderr []byte
	// Exit is set on the final event.
	Exit *ProcessExit
}

// eventSource abstracts the Start and Connect streams, whose messages differ
// only in type.
type eventSource interface {
	Receive() bool
	Err() error
	Close() error
	event() *envdapi.ProcessEvent
}

type startSource struct {
	*connect.ServerStreamForClient[envdapi.StartResponse]
}

func (s startSource) event() *envdapi.ProcessEvent { return &s.Msg().Event }

type connectSource struct {
	*connect.ServerStreamForClient[envdapi.ConnectResponse]
}

func (s connectSource) event() *envdapi.ProcessEvent { return &s.Msg().Event }

// ProcessStream is the event stream of one process, from [Envd.StartProcess]
// or [Envd.ConnectProcess]. Use it like a scanner: call Receive until it
// returns false, read each event with Event, then check Err and Close the
// stream. It is not safe for concurrent use, and it runs no goroutine of
// its own.
type ProcessStream struct {
	op      string
	ctx     context.Context // the call's context, for classifying failures
	src     eventSource
	pid     uint32
	pending *envdapi.ProcessEvent // an event read while waiting for start
	ev      ProcessEvent
	ended   bool // the end event was seen
	stopped bool // Receive returned false
	err     error
}

// Pid returns the process ID.
func (st *ProcessStream) Pid() uint32 { return st.pid }

// Receive advances to the next output or end event. It returns false once
// the stream is over: after the end event, when the daemon ends the stream
// or when it fails (then Err says why).
func (st *ProcessStream) Receive() bool {
	if st.stopped {
		return false
	}
	if st.ended {
		// Drain the stream so that its connection can be reused.
		for st.src.Receive() {
		}
		st.stopped = true
		return false
	}
	for {
		var ev *envdapi.ProcessEvent
		if st.pending != nil {
			ev, st.pending = st.pending, nil
		} else if st.src.Receive() {
			ev = st.src.event()
		} else {
			break
		}
		if st.set(ev) {
			return true
		}
	}
	st.stopped = true
	if err := st.src.Err(); err != nil {
		st.err = rpcError(st.ctx, st.op, err)
	} else {
		st.err = &Error{Op: st.op, Category: ProviderError, Code: "missing_end_event"}
	}
	return false
}

// set turns a wire event into the current event; it reports false for
// events that are not shown (keepalive, a repeated start, pty output).
func (st *ProcessStream) set(ev *envdapi.ProcessEvent) bool {
	switch {
	case ev.Data != nil:
		if len(ev.Data.Stdout) == 0 && len(ev.Data.Stderr) == 0 {
			return false
		}
		st.ev = ProcessEvent{Stdout: ev.Data.Stdout, Stderr: ev.Data.Stderr}
		return true
	case ev.End != nil:
		st.ended = true
		st.ev = ProcessEvent{Exit: &ProcessExit{ExitCode: int(ev.End.ExitCode), Exited: ev.End.Exited, Status: ev.End.Status}}
		return true
	}
	return false
}

// Event returns the event Receive advanced to. Its byte slices belong to
// the caller.
func (st *ProcessStream) Event() ProcessEvent { return st.ev }

// Err returns nil when the stream ended with the process's end event, and
// the failure otherwise (an *Error). It is meaningful once Receive has
// returned false.
func (st *ProcessStream) Err() error {
	if !st.stopped || st.err == nil {
		return nil
	}
	return st.err
}

// Close stops reading the stream; it does not signal the process.
func (st *ProcessStream) Close() error {
	_ = st.src.Close()
	return nil
}

// awaitStart reads up to the start event, which must come first (after
// keepalives) on a Start stream. On a Connect stream a first event other
// than start is kept for Receive.
func (st *ProcessStream) awaitStart(requireStart bool) error {
	for st.src.Receive() {
		ev := st.src.event()
		switch {
		case ev.Keepalive != nil:
			continue
		case ev.Start != nil:
			st.pid = ev.Start.Pid
			return nil
		case requireStart:
			return &Error{Op: st.op, Category: ProviderError, Code: "missing_start_event"}
		default:
			st.pending = ev
			return nil
		}
	}
	if err := st.src.Err(); err != nil {
		return rpcError(st.ctx, st.op, err)
	}
	return &Error{Op: st.op, Category: ProviderError, Code: "missing_start_event"}
}

// StartProcess starts a process and returns its event stream once the
// daemon has reported its pid (the first event of the stream). The stream
// lives as long as ctx: cancelling ctx ends the stream but does not signal
// the process. A deadline on ctx is sent to the daemon (Connect-Timeout-Ms),
// which may end the process when it passes. The caller must Close the stream.
//
// Operation: POST /process.Process/Start
func (e *Envd) StartProcess(ctx context.Context, cfg *ProcessConfig) (*ProcessStream, error) {
	const op = OpProcessStart
	if cfg == nil || cfg.Cmd == "" {
		return nil, invalidArgument(op, "cmd")
	}
	ctx = withProbe(ctx)
	req := &envdapi.StartRequest{
		Process: envdapi.ProcessConfig{Cmd: cfg.Cmd, Args: cfg.Args, Envs: cfg.Envs},
		Stdin:   &cfg.Stdin,
	}
	if cfg.Cwd != "" {
		cwd := cfg.Cwd
		req.Process.Cwd = &cwd
	}
	if cfg.Tag != "" {
		tag := cfg.Tag
		req.Tag = &tag
	}
	ss, err := e.start.CallServerStream(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, rpcError(ctx, op, err)
	}
	st := &ProcessStream{op: op, ctx: ctx, src: startSource{ss}}
	if err := st.awaitStart(true); err != nil {
		_ = ss.Close()
		return nil, err
	}
	return st, nil
}

// ConnectProcess attaches to a running process's event stream. Output
// produced before the call is not replayed. The caller must Close the stream.
//
// Operation: POST /process.Process/Connect
func (e *Envd) ConnectProcess(ctx context.Context, pid uint32) (*ProcessStream, error) {
	const op = OpProcessConnect
	if pid == 0 {
		return nil, invalidArgument(op, "pid")
	}
	ctx = withProbe(ctx)
	ss, err := e.connect.CallServerStream(ctx, connect.NewRequest(&envdapi.ConnectRequest{Process: selector(pid)}))
	if err != nil {
		return nil, rpcError(ctx, op, err)
	}
	st := &ProcessStream{op: op, ctx: ctx, src: connectSource{ss}}
	if err := st.awaitStart(false); err != nil {
		_ = ss.Close()
		return nil, err
	}
	if st.pid == 0 {
		st.pid = pid
	}
	return st, nil
}

// ListProcesses lists the processes the daemon is running.
//
// Operation: POST /process.Process/List
func (e *Envd) ListProcesses(ctx context.Context) ([]ProcessInfo, error) {
	res, err := unaryCall(ctx, e, OpProcessList, e.list, &envdapi.ListRequest{})
	if err != nil {
		return nil, err
	}
	out := make([]ProcessInfo, 0, len(res.Processes))
	for _, p := range res.Processes {
		pi := ProcessInfo{Pid: p.Pid, Cmd: p.Config.Cmd, Args: slices.Clone(p.Config.Args), Envs: maps.Clone(p.Config.Envs)}
		if p.Tag != nil {
			pi.Tag = *p.Tag
		}
		if p.Config.Cwd != nil {
			pi.Cwd = *p.Config.Cwd
		}
		out = append(out, pi)
	}
	return out, nil
}

// SendInput writes data to a process's standard input, which must have
// been kept open ([ProcessConfig.Stdin]).
//
// Operation: POST /process.Process/SendInput
func (e *Envd) SendInput(ctx context.Context, pid uint32, data []byte) error {
	const op = OpProcessSendInput
	if pid == 0 {
		return invalidArgument(op, "pid")
	}
	_, err := unaryCall(ctx, e, op, e.sendInput, &envdapi.SendInputRequest{Process: selector(pid), Input: envdapi.ProcessInput{Stdin: data}})
	return err
}

// SendSignal delivers SIGTERM or SIGKILL to a process.
//
// Operation: POST /process.Process/SendSignal
func (e *Envd) SendSignal(ctx context.Context, pid uint32, sig Signal) error {
	const op = OpProcessSendSignal
	if pid == 0 {
		return invalidArgument(op, "pid")
	}
	w, ok := sig.wire()
	if !ok {
		return invalidArgument(op, "signal")
	}
	_, err := unaryCall(ctx, e, op, e.sendSignal, &envdapi.SendSignalRequest{Process: selector(pid), Signal: w})
	return err
}

// CloseStdin closes a process's standard input, so that it reads end of file.
//
// Operation: POST /process.Process/CloseStdin
func (e *Envd) CloseStdin(ctx context.Context, pid uint32) error {
	const op = OpProcessCloseStdin
	if pid == 0 {
		return invalidArgument(op, "pid")
	}
	_, err := unaryCall(ctx, e, op, e.closeStdin, &envdapi.CloseStdinRequest{Process: selector(pid)})
	return err
}

func selector(pid uint32) envdapi.ProcessSelector {
	return envdapi.ProcessSelector{Pid: &pid}
}
