package fakeenvd

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// TestProcessOutputOverTime checks that stdout and stderr arrive as
// separate events while the process runs: after each round the script
// waits for a gate the test opens only once it has received that round's
// two lines, so output held back until the end would hang (and fail).
func TestProcessOutputOverTime(t *testing.T) {
	d := newDaemon(t, Config{})
	_, sub := start(t, d, bashReq("for i in 1 2 3; do echo out$i; echo err$i >&2; "+gateWait("$i")+"; done"))
	defer sub.cancel()
	type arrival struct{ kind, data string }
	var got []arrival
	var out, errs strings.Builder
	guard := time.After(hangGuard)
	for round := 1; round <= 3; {
		select {
		case ev := <-sub.ch:
			switch {
			case ev.Data != nil && len(ev.Data.Stdout) > 0:
				got = append(got, arrival{"out", string(ev.Data.Stdout)})
				out.Write(ev.Data.Stdout)
			case ev.Data != nil:
				got = append(got, arrival{"err", string(ev.Data.Stderr)})
				errs.Write(ev.Data.Stderr)
			case ev.End != nil:
				t.Fatalf("ended at round %d: %+v; events %+v", round, ev.End, got)
			}
		case <-guard:
			t.Fatalf("round %d's output never came while the process waited: %+v", round, got)
		}
		if want := fmt.Sprintf("out%d\n", round); strings.HasSuffix(out.String(), want) && strings.HasSuffix(errs.String(), fmt.Sprintf("err%d\n", round)) {
			openGate(t, d, fmt.Sprint(round))
			round++
		}
	}
	if r := collect(t, sub); r.code() != 0 {
		t.Fatalf("end %+v", r.end)
	}
	if out.String() != "out1\nout2\nout3\n" || errs.String() != "err1\nerr2\nerr3\n" {
		t.Fatalf("stdout %q stderr %q", out.String(), errs.String())
	}
	if len(got) < 6 {
		t.Fatalf("want stdout and stderr as separate events, got %+v", got)
	}
	// echo's separate writes are coalesced into one event per line here.
	if got[0].data != "out1\n" {
		t.Fatalf("first event %q", got[0].data)
	}
}

func TestProcessEndEvents(t *testing.T) {
	d := newDaemon(t, Config{})
	for _, tc := range []struct {
		script string
		want   envdapi.EndEvent
	}{
		{"true", envdapi.EndEvent{Exited: true, Status: "exit status 0"}},
		{"exit 7", envdapi.EndEvent{ExitCode: 7, Exited: true, Status: "exit status 7", Error: ptr("exit status 7")}},
		{"nosuch", envdapi.EndEvent{ExitCode: 127, Exited: true, Status: "exit status 127", Error: ptr("exit status 127")}},
	} {
		r := run(t, d, tc.script)
		if fmt.Sprint(r.end.ExitCode, r.end.Exited, r.end.Status, deref(r.end.Error)) !=
			fmt.Sprint(tc.want.ExitCode, tc.want.Exited, tc.want.Status, deref(tc.want.Error)) {
			t.Errorf("%q: end = %+v (error %q)", tc.script, r.end, deref(r.end.Error))
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestProcessBackgroundJobs checks that a background job runs beside the
// script and that the process ends only after the job's output: the job
// waits for a gate the test opens after the foreground's "early" arrived.
func TestProcessBackgroundJobs(t *testing.T) {
	d := newDaemon(t, Config{})
	_, sub := start(t, d, bashReq("("+gateWait("late")+"; echo late) & echo early"))
	if ev := nextEvent(t, sub); ev.Data == nil || string(ev.Data.Stdout) != "early\n" {
		t.Fatalf("first event %+v, want early while the job waits", ev)
	}
	openGate(t, d, "late")
	if r := collect(t, sub); r.stdout != "late\n" || r.code() != 0 {
		t.Fatalf("after the gate: stdout %q end %+v", r.stdout, r.end)
	}
}

func TestProcessSignals(t *testing.T) {
	d := newDaemon(t, Config{})
	for _, tc := range []struct {
		name   string
		script string
		stdin  bool
		sig    syscall.Signal
		status string
	}{
		{"sleep SIGTERM", "echo started; sleep 3600; echo after", false, syscall.SIGTERM, "signal: terminated"},
		{"sleep SIGKILL", "echo started; sleep 3600; echo after", false, syscall.SIGKILL, "signal: killed"},
		{"busy loop", "echo started; while true; do :; done", false, syscall.SIGKILL, "signal: killed"},
		{"yes to devnull", "echo started; yes > /dev/null", false, syscall.SIGTERM, "signal: terminated"},
		{"blocked on stdin", "echo started; cat", true, syscall.SIGKILL, "signal: killed"},
		{"read builtin", "echo started; read x; echo got", true, syscall.SIGTERM, "signal: terminated"},
		{"nested shell pipeline", "echo started; bash -c 'yes | cat > /dev/null'", false, syscall.SIGKILL, "signal: killed"},
		{"background sleep", "echo started; sleep 3600 & wait; echo after", false, syscall.SIGTERM, "signal: terminated"},
	} {
		// Nothing but the signal ends these scripts before the hang guard
		// (the sleeps outlast it): ending at all shows the signal worked.
		t.Run(tc.name, func(t *testing.T) {
			req := bashReq(tc.script)
			req.Stdin = ptr(tc.stdin)
			p, sub := start(t, d, req)
			ev := nextEvent(t, sub)
			if ev.Data == nil || string(ev.Data.Stdout) != "started\n" {
				t.Fatalf("first event %+v", ev)
			}
			p.signal(tc.sig)
			r := collect(t, sub)
			if r.end.ExitCode != -1 || r.end.Exited || r.end.Status != tc.status || deref(r.end.Error) != tc.status {
				t.Fatalf("end = %+v error %q", r.end, deref(r.end.Error))
			}
			if strings.Contains(r.stdout, "after") || strings.Contains(r.stdout, "got") {
				t.Fatalf("ran on after the signal: %q", r.stdout)
			}
			waitFor(t, func() bool { return len(d.Processes()) == 0 })
		})
	}
}

func TestProcessStdin(t *testing.T) {
	d := newDaemon(t, Config{})
	req := bashReq("read a; echo got $a; cat | wc -l")
	req.Stdin = ptr(true)
	p, sub := start(t, d, req)
	ctx := context.Background()
	if err := p.writeStdin(ctx, []byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	if ev := <-sub.ch; ev.Data == nil || string(ev.Data.Stdout) != "got hello\n" {
		t.Fatalf("event %+v", ev)
	}
	if err := p.writeStdin(ctx, []byte("x\ny\nz\n")); err != nil {
		t.Fatal(err)
	}
	if err := p.closeStdin(); err != nil {
		t.Fatal(err)
	}
	r := collect(t, sub)
	if r.stdout != "3\n" || r.code() != 0 {
		t.Fatalf("stdout %q code %d", r.stdout, r.code())
	}
	if err := p.writeStdin(ctx, []byte("late")); err == nil {
		t.Fatal("write after close succeeded")
	}

	// stdin=false: the process reads EOF at once.
	r = run(t, d, "cat; echo eof")
	if r.stdout != "eof\n" {
		t.Fatalf("stdin=false stdout %q", r.stdout)
	}
	// stdin unset (the proto default) keeps it open, like envd.
	req = bashReq("cat")
	req.Stdin = nil
	p, sub = start(t, d, req)
	// cat echoes each write, then still accepts the next: stdin stayed open.
	for _, chunk := range []string{"kept open", " still"} {
		if err := p.writeStdin(ctx, []byte(chunk)); err != nil {
			t.Fatalf("write %q with stdin unset: %v", chunk, err)
		}
		if ev := nextEvent(t, sub); ev.Data == nil || string(ev.Data.Stdout) != chunk {
			t.Fatalf("event %+v, want cat's echo of %q", ev, chunk)
		}
	}
	p.closeStdin()
	if r := collect(t, sub); r.stdout != "" || r.code() != 0 {
		t.Fatalf("after closing stdin: stdout %q end %+v", r.stdout, r.end)
	}
}

func TestProcessTableConnectAndList(t *testing.T) {
	d := newDaemon(t, Config{})
	// The ticker waits after tick1 until the test has connected again.
	req := bashReq("echo tick1; " + gateWait("connected") + "; for i in $(seq 2 6); do echo tick$i; done")
	req.Tag = ptr("ticker")
	p, sub := start(t, d, req)
	if p.pid != firstPID {
		t.Fatalf("first pid %d", p.pid)
	}
	// The starting stream goes away: the process keeps running.
	nextEvent(t, sub)
	sub.cancel()
	procs := d.Processes()
	if len(procs) != 1 || procs[0].Pid != p.pid || deref(procs[0].Tag) != "ticker" || procs[0].Config.Cmd != "/bin/bash" {
		t.Fatalf("processes %+v", procs)
	}
	got, err := d.procs.get(envdapi.ProcessSelector{Tag: ptr("ticker")})
	if err != nil || got != p {
		t.Fatalf("by tag: %v", err)
	}
	csub := got.hub.subscribe()
	openGate(t, d, "connected")
	r := collect(t, csub)
	if r.stdout != "tick2\ntick3\ntick4\ntick5\ntick6\n" || r.code() != 0 {
		t.Fatalf("connected stdout %q code %d", r.stdout, r.code())
	}
	waitFor(t, func() bool { return len(d.Processes()) == 0 })
	if _, err := d.procs.get(envdapi.ProcessSelector{Pid: ptr(p.pid)}); err == nil {
		t.Fatal("exited process still in the table")
	}
	// Pids increase.
	p2, sub2 := start(t, d, bashReq("true"))
	collect(t, sub2)
	if p2.pid != p.pid+1 {
		t.Fatalf("second pid %d", p2.pid)
	}
}

// TestProcessTimeout checks that the timeout kills the process: the sleep
// outlasts the hang guard, so only the kill ends it in time, and the
// command after the sleep never runs.
func TestProcessTimeout(t *testing.T) {
	d := newDaemon(t, Config{})
	a, _ := d.account("")
	_, sub, err := d.startProcess(a, bashReq("sleep 3600; echo after"), 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	r := collect(t, sub)
	if r.end.Status != "signal: killed" || r.end.ExitCode != -1 || r.stdout != "" {
		t.Fatalf("end %+v stdout %q", r.end, r.stdout)
	}
}

func TestProcessLongOutput(t *testing.T) {
	d := newDaemon(t, Config{})
	for _, tc := range []struct {
		script string
		size   int
		check  func(string) bool
	}{
		{"seq 1 1000000", 6888896, func(s string) bool {
			return strings.HasPrefix(s, "1\n2\n") && strings.HasSuffix(s, "\n999999\n1000000\n")
		}},
		{"yes | head -c 10000000", 10000000, func(s string) bool { return strings.Count(s, "y\n") == 5000000 }},
	} {
		t0 := time.Now()
		r := run(t, d, tc.script)
		took := time.Since(t0)
		if len(r.stdout) != tc.size || !tc.check(r.stdout) || r.code() != 0 {
			t.Fatalf("%q: %d bytes, code %d, stderr %q", tc.script, len(r.stdout), r.code(), r.stderr)
		}
		// Chunks are coalesced up to 32 KiB: few events, no quadratic copying.
		if maxEvents := tc.size/(16<<10) + 10; r.dataEvents > maxEvents {
			t.Fatalf("%q: %d data events", tc.script, r.dataEvents)
		}
		t.Logf("%q: %d bytes in %d events, %v", tc.script, len(r.stdout), r.dataEvents, took)
	}
}
