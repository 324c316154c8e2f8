package fakeenvd

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// newDaemon returns a daemon closed at the end of the test.
func newDaemon(t testing.TB, cfg Config) *Daemon {
	t.Helper()
	d := New(cfg)
	t.Cleanup(d.Close)
	return d
}

// result is what a finished process produced.
type result struct {
	stdout, stderr string
	end            envdapi.EndEvent
	dataEvents     int
}

// code is the exit code, -1 for a signal.
func (r result) code() int { return int(r.end.ExitCode) }

func ptr[T any](v T) *T { return &v }

// bashReq is the Start request the E2B SDK sends for a command.
func bashReq(script string) *envdapi.StartRequest {
	return &envdapi.StartRequest{
		Process: envdapi.ProcessConfig{Cmd: "/bin/bash", Args: []string{"-l", "-c", script}},
		Stdin:   ptr(false),
	}
}

// start launches a request as the default user.
func start(t testing.TB, d *Daemon, req *envdapi.StartRequest) (*process, *subscription) {
	t.Helper()
	a, _ := d.account("")
	p, sub, err := d.startProcess(a, req, 0)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return p, sub
}

// hangGuard bounds every wait of these tests. It only turns a hang into a
// failure: no test passes or fails on how long something took, since CI
// machines may be busy.
const hangGuard = 2 * time.Minute

// guardCtx is a context canceled once hangGuard passes. It carries no
// deadline, so a Connect client sends no Connect-Timeout-Ms for it and the
// daemon puts no timeout on the processes it starts.
func guardCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	stop := time.AfterFunc(hangGuard, cancel)
	t.Cleanup(func() { stop.Stop(); cancel() })
	return ctx
}

// gateWait is a script fragment that waits until the gate file
// /tmp/gate-<name> exists. Tests write that file (openGate) once they have
// seen what must come first, which orders events causally instead of by
// sleeping.
func gateWait(name string) string {
	return "while [ ! -e /tmp/gate-" + name + " ]; do sleep 0.01; done"
}

// openGate writes the gate file a gateWait(name) fragment waits for.
func openGate(t testing.TB, d *Daemon, name string) {
	t.Helper()
	if err := d.FS().WriteFile("/tmp/gate-"+name, nil, 0o644); err != nil {
		t.Fatalf("open gate %s: %v", name, err)
	}
}

// nextEvent receives a subscription's next event; a hang fails the test.
func nextEvent(t testing.TB, sub *subscription) envdapi.ProcessEvent {
	t.Helper()
	select {
	case ev := <-sub.ch:
		return ev
	case <-time.After(hangGuard):
		t.Fatalf("no event within %v", hangGuard)
		return envdapi.ProcessEvent{}
	}
}

// collect reads a subscription to the end event; a hang fails the test.
func collect(t testing.TB, sub *subscription) result {
	t.Helper()
	defer sub.cancel()
	var out, errb bytes.Buffer
	var r result
	deadline := time.After(hangGuard)
	for {
		select {
		case ev, ok := <-sub.ch:
			if !ok {
				t.Fatalf("stream closed without end; stdout=%q stderr=%q", out.String(), errb.String())
			}
			switch {
			case ev.Data != nil:
				r.dataEvents++
				out.Write(ev.Data.Stdout)
				errb.Write(ev.Data.Stderr)
			case ev.End != nil:
				r.stdout, r.stderr, r.end = out.String(), errb.String(), *ev.End
				return r
			}
		case <-deadline:
			t.Fatalf("no end after %v; stdout=%q stderr=%q", hangGuard, out.String(), errb.String())
		}
	}
}

// run runs a bash script to completion.
func run(t testing.TB, d *Daemon, script string) result {
	t.Helper()
	_, sub := start(t, d, bashReq(script))
	return collect(t, sub)
}

// waitFor polls cond until it holds; a hang fails the test.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("condition not met within %v", hangGuard)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
