package fakeenvd

import (
	"strconv"
	"strings"
	"testing"
)

// TestJobControl checks the job control bash gives a non-interactive
// script: $! is a PID, kill and wait take it or %N, signals end a job with
// 128 + the signal (bash's exit status for a signalled command).
func TestJobControl(t *testing.T) {
	d := newDaemon(t, Config{})
	cases := []struct{ script, stdout, stderr string }{
		{`sleep 30 & kill -9 $!; wait $!; echo "code $?"`, "code 137\n", ""},
		{`sleep 30 & kill $!; wait $!; echo "code $?"`, "code 143\n", ""},
		{`sleep 30 & kill -s TERM %1; wait %1; echo "code $?"`, "code 143\n", ""},
		{`sleep 30 & kill -SIGKILL %%; wait; echo "all $?"`, "all 0\n", ""},
		{`sleep 30 & jobs; jobs -p | grep -c "^$!$"; kill %1`, "[1]+  Running                 sleep 30 &\n1\n", ""},
		{`sleep 30 & sleep 31 & jobs; kill %1 %2`, "[1]-  Running                 sleep 30 &\n[2]+  Running                 sleep 31 &\n", ""},
		{`(sleep 0.01; exit 3) & sleep 30 & wait -n; echo "n $?"; kill %2; wait %2; echo "two $?"; wait -n; echo "none $?"`, "n 3\ntwo 143\nnone 127\n", ""},
		{`echo "[$!]"; x=hi; echo "$x" & wait`, "[]\nhi\n", ""},
		{`wait 99999; echo "w $?"; kill 99999; echo "k $?"; kill %3; echo "j $?"`, "w 127\nk 1\nj 1\n",
			"bash: wait: pid 99999 is not a child of this shell\nbash: kill: (99999) - No such process\nbash: kill: %3: no such job\n"},
		{`for i in 1 2 3; do (echo "job $i") > /tmp/job$i & done; wait; cat /tmp/job1 /tmp/job2 /tmp/job3`, "job 1\njob 2\njob 3\n", ""},
		{`sleep 30 & kill -0 $! && echo alive; kill -9 $!; wait $!; kill -0 $!; echo "gone $?"`, "alive\ngone 1\n", ""},
	}
	for _, c := range cases {
		r := run(t, d, c.script)
		if r.code() != 0 || r.stdout != c.stdout || !strings.HasPrefix(r.stderr, c.stderr) {
			t.Errorf("%s\n got code %d stdout %q stderr %q\nwant stdout %q stderr %q", c.script, r.code(), r.stdout, r.stderr, c.stdout, c.stderr)
		}
	}
	if n := len(d.Processes()); n != 0 {
		t.Errorf("%d processes left", n)
	}
}

// TestKillDaemonProcess checks that kill reaches a process the daemon
// started (a PID Process/List shows), as it reaches any process in Linux.
func TestKillDaemonProcess(t *testing.T) {
	d := newDaemon(t, Config{})
	p, sub := start(t, d, bashReq("sleep 60"))
	r := run(t, d, "kill -9 "+strconv.Itoa(int(p.pid))+"; echo $?")
	if r.stdout != "0\n" {
		t.Fatalf("kill: %q %q", r.stdout, r.stderr)
	}
	if end := collect(t, sub).end; end.Status != "signal: killed" {
		t.Fatalf("the killed process ended %+v", end)
	}
}
