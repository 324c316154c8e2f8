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

// collect reads a subscription to the end event.
func collect(t testing.TB, sub *subscription, timeout time.Duration) result {
	t.Helper()
	defer sub.cancel()
	var out, errb bytes.Buffer
	var r result
	deadline := time.After(timeout)
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
			t.Fatalf("no end after %v; stdout=%q stderr=%q", timeout, out.String(), errb.String())
		}
	}
}

// run runs a bash script to completion.
func run(t testing.TB, d *Daemon, script string) result {
	t.Helper()
	_, sub := start(t, d, bashReq(script))
	return collect(t, sub, 20*time.Second)
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t testing.TB, timeout time.Duration, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("condition not met within %v", timeout)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
