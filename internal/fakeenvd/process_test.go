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

func TestProcessOutputOverTime(t *testing.T) {
	d := newDaemon(t, Config{})
	_, sub := start(t, d, bashReq("for i in 1 2 3; do echo out$i; echo err$i >&2; sleep 0.1; done"))
	defer sub.cancel()
	type arrival struct {
		at   time.Duration
		kind string
		data string
	}
	var got []arrival
	t0 := time.Now()
	for ev := range sub.ch {
		switch {
		case ev.Data != nil && len(ev.Data.Stdout) > 0:
			got = append(got, arrival{time.Since(t0), "out", string(ev.Data.Stdout)})
		case ev.Data != nil:
			got = append(got, arrival{time.Since(t0), "err", string(ev.Data.Stderr)})
		}
	}
	var out, errs strings.Builder
	for _, a := range got {
		if a.kind == "out" {
			out.WriteString(a.data)
		} else {
			errs.WriteString(a.data)
		}
	}
	if out.String() != "out1\nout2\nout3\n" || errs.String() != "err1\nerr2\nerr3\n" {
		t.Fatalf("stdout %q stderr %q", out.String(), errs.String())
	}
	if len(got) < 6 {
		t.Fatalf("want stdout and stderr as separate events, got %+v", got)
	}
	if spread := got[len(got)-1].at - got[0].at; spread < 150*time.Millisecond {
		t.Fatalf("output did not arrive over time: %+v", got)
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

func TestProcessBackgroundJobs(t *testing.T) {
	d := newDaemon(t, Config{})
	t0 := time.Now()
	r := run(t, d, "(sleep 0.2; echo late) & echo early")
	if r.stdout != "early\nlate\n" || time.Since(t0) < 200*time.Millisecond {
		t.Fatalf("stdout %q after %v", r.stdout, time.Since(t0))
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
		{"sleep SIGTERM", "echo started; sleep 30; echo after", false, syscall.SIGTERM, "signal: terminated"},
		{"sleep SIGKILL", "echo started; sleep 30", false, syscall.SIGKILL, "signal: killed"},
		{"busy loop", "echo started; while true; do :; done", false, syscall.SIGKILL, "signal: killed"},
		{"yes to devnull", "echo started; yes > /dev/null", false, syscall.SIGTERM, "signal: terminated"},
		{"blocked on stdin", "echo started; cat", true, syscall.SIGKILL, "signal: killed"},
		{"read builtin", "echo started; read x; echo got", true, syscall.SIGTERM, "signal: terminated"},
		{"nested shell pipeline", "echo started; bash -c 'yes | cat > /dev/null'", false, syscall.SIGKILL, "signal: killed"},
		{"background sleep", "echo started; sleep 30 & wait", false, syscall.SIGTERM, "signal: terminated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := bashReq(tc.script)
			req.Stdin = ptr(tc.stdin)
			p, sub := start(t, d, req)
			ev := <-sub.ch
			if ev.Data == nil || string(ev.Data.Stdout) != "started\n" {
				t.Fatalf("first event %+v", ev)
			}
			t0 := time.Now()
			p.signal(tc.sig)
			r := collect(t, sub, 5*time.Second)
			if took := time.Since(t0); took > 2*time.Second {
				t.Fatalf("took %v to stop", took)
			}
			if r.end.ExitCode != -1 || r.end.Exited || r.end.Status != tc.status || deref(r.end.Error) != tc.status {
				t.Fatalf("end = %+v error %q", r.end, deref(r.end.Error))
			}
			if strings.Contains(r.stdout, "after") || strings.Contains(r.stdout, "got") {
				t.Fatalf("ran on after the signal: %q", r.stdout)
			}
			waitFor(t, time.Second, func() bool { return len(d.Processes()) == 0 })
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
	r := collect(t, sub, 5*time.Second)
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
	p.writeStdin(ctx, []byte("kept open"))
	time.Sleep(30 * time.Millisecond)
	if len(d.Processes()) != 1 {
		t.Fatal("cat ended with stdin still open")
	}
	p.closeStdin()
	if r := collect(t, sub, 5*time.Second); r.stdout != "kept open" {
		t.Fatalf("stdout %q", r.stdout)
	}
}

func TestProcessTableConnectAndList(t *testing.T) {
	d := newDaemon(t, Config{})
	req := bashReq("for i in $(seq 1 6); do echo tick$i; sleep 0.05; done")
	req.Tag = ptr("ticker")
	p, sub := start(t, d, req)
	if p.pid != firstPID {
		t.Fatalf("first pid %d", p.pid)
	}
	// The starting stream goes away: the process keeps running.
	<-sub.ch
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
	r := collect(t, csub, 5*time.Second)
	if !strings.HasSuffix(r.stdout, "tick6\n") || strings.Contains(r.stdout, "tick1\n") || r.code() != 0 {
		t.Fatalf("connected stdout %q code %d", r.stdout, r.code())
	}
	waitFor(t, time.Second, func() bool { return len(d.Processes()) == 0 })
	if _, err := d.procs.get(envdapi.ProcessSelector{Pid: ptr(p.pid)}); err == nil {
		t.Fatal("exited process still in the table")
	}
	// Pids increase.
	p2, sub2 := start(t, d, bashReq("true"))
	collect(t, sub2, 5*time.Second)
	if p2.pid != p.pid+1 {
		t.Fatalf("second pid %d", p2.pid)
	}
}

func TestProcessTimeout(t *testing.T) {
	d := newDaemon(t, Config{})
	a, _ := d.account("")
	t0 := time.Now()
	_, sub, err := d.startProcess(a, bashReq("sleep 10"), 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	r := collect(t, sub, 5*time.Second)
	if r.end.Status != "signal: killed" || time.Since(t0) > 2*time.Second {
		t.Fatalf("end %+v after %v", r.end, time.Since(t0))
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
		if took > 15*time.Second {
			t.Fatalf("%q took %v", tc.script, took)
		}
		t.Logf("%q: %d bytes in %d events, %v", tc.script, len(r.stdout), r.dataEvents, took)
	}
}
