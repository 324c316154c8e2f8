package fakeenvd

import (
	"context"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// TestPTY: a process started with a pty is an interactive bash on a
// terminal: output comes as pty data with CRLF line ends, input goes
// through SendInput{pty} (echoed), Update resizes it (COLUMNS/LINES), and
// stdin input is refused as envd's WriteStdin refuses it.
func TestPTY(t *testing.T) {
	e := newEnv(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st := startStream(t, ctx, e, &envdapi.StartRequest{
		Process: envdapi.ProcessConfig{Cmd: "/bin/bash", Args: []string{"-i", "-l"}, Envs: map[string]string{"TERM": "xterm-256color"}},
		Pty:     &envdapi.PTY{Size: envdapi.PTYSize{Cols: 80, Rows: 24}},
	}, nil)
	if !st.Receive() || st.Msg().Event.Start == nil {
		t.Fatalf("first event %+v", st.Msg())
	}
	pid := st.Msg().Event.Start.Pid
	sel := envdapi.ProcessSelector{Pid: &pid}
	send := func(s string) {
		t.Helper()
		if _, err := call[envdapi.SendInputRequest, envdapi.SendInputResponse](t, e, envdapi.ProcessSendInputProcedure,
			&envdapi.SendInputRequest{Process: sel, Input: envdapi.ProcessInput{Pty: []byte(s)}}, nil); err != nil {
			t.Fatalf("send %q: %v", s, err)
		}
	}
	var out strings.Builder
	readUntil := func(want string) {
		t.Helper()
		for !strings.Contains(out.String(), want) {
			if !st.Receive() {
				t.Fatalf("stream ended (%v) before %q; output %q", st.Err(), want, out.String())
			}
			ev := st.Msg().Event
			if ev.Data != nil {
				if ev.Data.Stdout != nil || ev.Data.Stderr != nil {
					t.Fatalf("stdio data on a pty: %+v", ev.Data)
				}
				out.Write(ev.Data.Pty)
			}
		}
	}
	readUntil("user@e2b:~$ ")
	send("cd /tmp\r")
	readUntil("user@e2b:/tmp$ ")
	if _, err := call[envdapi.UpdateRequest, envdapi.UpdateResponse](t, e, envdapi.ProcessUpdateProcedure,
		&envdapi.UpdateRequest{Process: sel, Pty: &envdapi.PTY{Size: envdapi.PTYSize{Cols: 120, Rows: 40}}}, nil); err != nil {
		t.Fatal(err)
	}
	send("false\r")
	send("echo $? $COLUMNS x $LINES; pwd\r")
	readUntil("1 120 x 40\r\n/tmp\r\n")
	// Job control across lines, as in bash -i.
	send("sleep 30 &\r")
	send("kill %1; wait %1; echo \"job $?\"\r")
	readUntil("job 143\r\n")
	if !strings.Contains(out.String(), "echo $? $COLUMNS x $LINES; pwd\r\n") {
		t.Errorf("input not echoed: %q", out.String())
	}
	_, err := call[envdapi.SendInputRequest, envdapi.SendInputResponse](t, e, envdapi.ProcessSendInputProcedure,
		&envdapi.SendInputRequest{Process: sel, Input: envdapi.ProcessInput{Stdin: []byte("x")}}, nil)
	if connect.CodeOf(err) != connect.CodeInternal {
		t.Errorf("stdin to a pty process: %v", err)
	}
	send("exit 3\r")
	var end *envdapi.EndEvent
	for st.Receive() {
		if st.Msg().Event.End != nil {
			end = st.Msg().Event.End
		}
	}
	if end == nil || end.ExitCode != 3 {
		t.Fatalf("end %+v (%v)", end, st.Err())
	}

	// Update of a process without a terminal fails as envd's ResizeTty.
	plain := startStream(t, ctx, e, bashReq("sleep 5"), nil)
	plain.Receive()
	ppid := plain.Msg().Event.Start.Pid
	_, err = call[envdapi.UpdateRequest, envdapi.UpdateResponse](t, e, envdapi.ProcessUpdateProcedure,
		&envdapi.UpdateRequest{Process: envdapi.ProcessSelector{Pid: &ppid}, Pty: &envdapi.PTY{Size: envdapi.PTYSize{Cols: 1, Rows: 1}}}, nil)
	if connect.CodeOf(err) != connect.CodeInternal || !strings.Contains(err.Error(), "tty not assigned to process") {
		t.Errorf("resize without a tty: %v", err)
	}
}
