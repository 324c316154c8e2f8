package fakeenvd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"connectrpc.com/connect"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// firstPID is the pid of a daemon's first process.
const firstPID = 1000

// killSignal is the cancellation cause of a signalled process; its text is
// what envd reports ("signal: killed", "signal: terminated").
type killSignal syscall.Signal

func (k killSignal) Error() string { return "signal: " + syscall.Signal(k).String() }

// process is one running command.
type process struct {
	pid    uint32
	tag    *string
	config envdapi.ProcessConfig

	proc     Proc
	hub      *outputHub
	out      *coalescer
	killed   chan struct{}
	killOnce sync.Once
	done     chan struct{}
	// timedOut is set before the kill of a process whose Connect-Timeout-Ms
	// expired, so that its Start stream ends with deadline_exceeded.
	timedOut atomic.Bool

	stdinMu sync.Mutex
	stdinW  *os.File // nil once closed

	tty bool // started with a terminal
}

// signal stops the process (the runner delivers sig), closes its stdin
// and drops output pending for slow subscribers.
func (p *process) signal(sig syscall.Signal) {
	_ = p.proc.Signal(sig)
	p.killOnce.Do(func() { close(p.killed) })
	_ = p.closeStdin()
}

// writeStdin writes to the process's standard input; it gives up when ctx
// ends or the process exits.
func (p *process) writeStdin(ctx context.Context, data []byte) error {
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	w := p.stdinW
	if w == nil {
		return errors.New("stdin not enabled or closed")
	}
	stop := context.AfterFunc(ctx, func() { _ = w.SetWriteDeadline(time.Now()) })
	_, err := w.Write(data)
	stop()
	_ = w.SetWriteDeadline(time.Time{})
	if err != nil {
		return fmt.Errorf("error writing to stdin of process '%d': %w", p.pid, err)
	}
	return nil
}

// closeStdin closes the write end of stdin; the process reads EOF.
func (p *process) closeStdin() error {
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if p.stdinW == nil {
		return nil
	}
	err := p.stdinW.Close()
	p.stdinW = nil
	return err
}

// info describes the process for List.
func (p *process) info() envdapi.ProcessInfo {
	return envdapi.ProcessInfo{Config: p.config, Pid: p.pid, Tag: p.tag}
}

// endEvent is the end of a process that exited with code, or was stopped
// with cause; it mirrors os.ProcessState as envd reports it.
func endEvent(code int, cause error) envdapi.ProcessEvent {
	end := &envdapi.EndEvent{}
	var sig killSignal
	if errors.As(cause, &sig) {
		msg := sig.Error()
		end.ExitCode, end.Exited, end.Status, end.Error = -1, false, msg, &msg
	} else {
		msg := fmt.Sprintf("exit status %d", code)
		end.ExitCode, end.Exited, end.Status = int32(code), true, msg
		if code != 0 {
			end.Error = &msg
		}
	}
	return envdapi.ProcessEvent{End: end}
}

// procTable holds the running processes of a daemon.
type procTable struct {
	mu    sync.Mutex
	next  uint32
	procs map[uint32]*process
}

func newProcTable() *procTable {
	return &procTable{next: firstPID, procs: map[uint32]*process{}}
}

// add registers p under its runner's pid, or a fresh one when it has none.
func (t *procTable) add(p *process) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p.pid == 0 {
		p.pid = t.next
		t.next++
	}
	t.procs[p.pid] = p
}

// allocPID hands out a PID without a process: the background jobs of the
// shell share the daemon's PID sequence.
func (t *procTable) allocPID() uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	pid := t.next
	t.next++
	return pid
}

func (t *procTable) remove(pid uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.procs, pid)
}

// get finds a process by pid or tag; a miss is a connect not_found error.
func (t *procTable) get(sel envdapi.ProcessSelector) (*process, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case sel.Pid != nil:
		if p, ok := t.procs[*sel.Pid]; ok {
			return p, nil
		}
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("process with pid %d not found", *sel.Pid))
	case sel.Tag != nil:
		for _, pid := range t.pidsLocked() {
			if p := t.procs[pid]; p.tag != nil && *p.tag == *sel.Tag {
				return p, nil
			}
		}
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("process with tag %s not found", *sel.Tag))
	}
	return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("process selector needs a pid or a tag"))
}

func (t *procTable) pidsLocked() []uint32 {
	pids := make([]uint32, 0, len(t.procs))
	for pid := range t.procs {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	return pids
}

// all returns the running processes ordered by pid.
func (t *procTable) all() []*process {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*process, 0, len(t.procs))
	for _, pid := range t.pidsLocked() {
		out = append(out, t.procs[pid])
	}
	return out
}

// startSpec is everything a new process needs.
type startSpec struct {
	runner  Runner
	proc    ProcSpec
	config  envdapi.ProcessConfig
	tag     *string
	timeout time.Duration // 0 = none
}

// start launches a process and returns it with a subscription made before
// it runs, so that the caller sees all of its output.
func (t *procTable) start(parent context.Context, abort <-chan struct{}, spec startSpec) (*process, *subscription, error) {
	p := &process{
		tag: spec.tag, config: spec.config, tty: spec.proc.PTY != nil,
		killed: make(chan struct{}), done: make(chan struct{}),
	}
	p.hub = newOutputHub(p.killed, abort)
	p.out = &coalescer{hub: p.hub}
	sub := p.hub.subscribe()
	ps := spec.proc
	ps.Stdout, ps.Stderr = streamWriter{p.out, kindStdout}, streamWriter{p.out, kindStderr}
	if p.tty {
		ps.Stdout = streamWriter{p.out, kindPty}
	}
	proc, err := spec.runner.Start(parent, ps)
	if err != nil {
		sub.cancel()
		return nil, nil, err
	}
	p.proc, p.stdinW, p.pid = proc, proc.Stdin(), proc.Pid()
	t.add(p)
	go t.run(p, spec.timeout)
	return p, sub, nil
}

// run waits for p and reports its end.
func (t *procTable) run(p *process, timeout time.Duration) {
	defer close(p.done)
	if timeout > 0 {
		timer := time.AfterFunc(timeout, func() {
			p.timedOut.Store(true)
			p.signal(syscall.SIGKILL)
		})
		defer timer.Stop()
	}
	code, cause := p.proc.Wait()
	p.out.close()
	_ = p.closeStdin()
	t.remove(p.pid)
	p.hub.finish(endEvent(code, cause))
}

// killAll signals every process and waits (bounded) for those it
// signalled to end. It waits on each process's own done channel rather
// than on a WaitGroup of the table: a start may race with it (a Close
// while a request starts a process), and a WaitGroup's Add may not race
// with its Wait.
func (t *procTable) killAll(wait time.Duration) {
	procs := t.all()
	for _, p := range procs {
		p.signal(syscall.SIGKILL)
	}
	timeout := time.After(wait)
	for _, p := range procs {
		select {
		case <-p.done:
		case <-timeout:
			return
		}
	}
}
