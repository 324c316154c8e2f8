package sandbox_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/internal/fakeenvd"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

func TestRun_ExitCodesAndStreams(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			h := newHarness(t, harnessOptions{mode: mode})
			ctx := context.Background()
			tests := []struct {
				cmd            string
				stdout, stderr string
				code           int
			}{
				{"echo out; echo err >&2; exit 3", "out\n", "err\n", 3},
				{"true", "", "", 0},
				{"printf 'a\\nb'; printf 'c' 1>&2", "a\nb", "c", 0},
				{"false", "", "", 1},
				{"no-such-command-xyz", "", "", 127},
			}
			for _, tt := range tests {
				out, err := h.envd.RunOutput(ctx, tt.cmd, nil)
				if err != nil {
					t.Fatalf("%q: %v", tt.cmd, err)
				}
				if string(out.Stdout) != tt.stdout || out.ExitCode != tt.code || !out.Exited {
					t.Errorf("%q: stdout %q, exit %d (exited %v); want %q, %d", tt.cmd, out.Stdout, out.ExitCode, out.Exited, tt.stdout, tt.code)
				}
				if tt.code != 127 && string(out.Stderr) != tt.stderr {
					t.Errorf("%q: stderr %q, want %q", tt.cmd, out.Stderr, tt.stderr)
				}
				if out.StdoutBytes != int64(len(out.Stdout)) || out.StderrBytes != int64(len(out.Stderr)) || out.Pid == 0 {
					t.Errorf("%q: counts %d/%d, pid %d", tt.cmd, out.StdoutBytes, out.StderrBytes, out.Pid)
				}
			}
		})
	}
}

func TestRun_CwdAndEnvs(t *testing.T) {
	h := newHarness(t, harnessOptions{cfg: fakeenvd.Config{EnvVars: map[string]string{"FROM_SANDBOX": "s1"}}})
	ctx := context.Background()
	if _, err := h.envd.MakeDir(ctx, "/tmp/work dir"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.envd.MakeDir(ctx, "proj"); err != nil { // relative: under the home
		t.Fatal(err)
	}
	tests := []struct {
		opts *sandbox.CommandOptions
		want string
	}{
		{nil, "/home/user||s1|user\n"},
		{&sandbox.CommandOptions{Cwd: "/tmp/work dir", Envs: map[string]string{"FOO": "bar baz", "FROM_SANDBOX": "over"}}, "/tmp/work dir|bar baz|over|user\n"},
		{&sandbox.CommandOptions{Cwd: "proj"}, "/home/user/proj||s1|user\n"},
	}
	for _, tt := range tests {
		out, err := h.envd.RunOutput(ctx, `echo "$(pwd)|$FOO|$FROM_SANDBOX|$(whoami)"`, tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		if string(out.Stdout) != tt.want {
			t.Errorf("got %q, want %q (stderr %q)", out.Stdout, tt.want, out.Stderr)
		}
	}
	root := h.sb.Envd(&sandbox.EnvdOptions{User: "root"})
	out, err := root.RunOutput(ctx, "whoami; pwd", nil)
	if err != nil || string(out.Stdout) != "root\n/root\n" {
		t.Errorf("as root: %q, %v", out.Stdout, err)
	}
	_, err = h.envd.Run(ctx, "pwd", &sandbox.CommandOptions{Cwd: canaryDir})
	wantErr(t, err, sandbox.OpProcessStart, sandbox.InvalidArgument)
}

func TestRun_TimeoutKillsTheProcess(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	// The sleeps outlast the hang guard: only the timeout, the cancel or the
	// deadline can end these commands, and never before their later echo.
	var stdout bytes.Buffer
	_, err := guarded(t, func() runResult {
		return runResultOf(h.envd.Run(ctx, "echo started; sleep 3600; echo after", &sandbox.CommandOptions{Timeout: 300 * time.Millisecond, Stdout: &stdout}))
	}).get()
	wantErr(t, err, sandbox.OpProcessStart, sandbox.Timeout)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, sandbox.ErrTimeout) {
		t.Errorf("errors.Is mismatch: %v", err)
	}
	if stdout.String() != "started\n" {
		t.Errorf("output before the timeout: %q", stdout.String())
	}
	assertNoProcesses(t, h)

	// Cancelling the context, once the command runs, stops it too.
	cctx, cancel := context.WithCancel(ctx)
	_, err = guarded(t, func() runResult {
		return runResultOf(h.envd.Run(cctx, "echo started; sleep 3600", &sandbox.CommandOptions{Stdout: cancelOnWrite(cancel)}))
	}).get()
	wantErr(t, err, sandbox.OpProcessStart, sandbox.Unavailable)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("errors.Is(err, context.Canceled) = false: %v", err)
	}
	assertNoProcesses(t, h)

	// A caller's deadline shorter than the timeout is a timeout as well.
	dctx, cancel2 := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel2()
	_, err = guarded(t, func() runResult {
		return runResultOf(h.envd.Run(dctx, "sleep 3600", &sandbox.CommandOptions{Timeout: time.Hour}))
	}).get()
	wantErr(t, err, sandbox.OpProcessStart, sandbox.Timeout)
	assertNoProcesses(t, h)
}

// runResult carries Run's two results through guarded.
type runResult struct {
	exit *sandbox.CommandResult
	err  error
}

func runResultOf(exit *sandbox.CommandResult, err error) runResult { return runResult{exit, err} }

func (r runResult) get() (*sandbox.CommandResult, error) { return r.exit, r.err }

// cancelOnWrite is a writer that calls cancel on its first write: it ends
// a context once the command has shown it runs.
func cancelOnWrite(cancel context.CancelFunc) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		cancel()
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// assertNoProcesses waits until the daemon runs no process.
func assertNoProcesses(t *testing.T, h *harness) {
	t.Helper()
	var procs []sandbox.ProcessInfo
	if !waitUntil(hangGuard, 10*time.Millisecond, func() bool {
		var err error
		if procs, err = h.envd.ListProcesses(context.Background()); err != nil {
			t.Fatal(err)
		}
		return len(procs) == 0
	}) {
		t.Fatalf("processes still running: %+v", procs)
	}
}

// hashWriter hashes what it is given without keeping it.
type hashWriter struct {
	h interface {
		Write([]byte) (int, error)
		Sum([]byte) []byte
	}
	n int64
}

func (w *hashWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return w.h.Write(p)
}

func TestRun_LargeOutputStreamsThrough(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	run := func(nOut, nErr int64) (allocated uint64) {
		t.Helper()
		out, errw := &hashWriter{h: sha256.New()}, &hashWriter{h: sha256.New()}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res, err := h.envd.Run(ctx, fmt.Sprintf("emit %d %d 32768", nOut, nErr), &sandbox.CommandOptions{Stdout: out, Stderr: errw})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != 0 || res.StdoutBytes != nOut || res.StderrBytes != nErr || out.n != nOut || errw.n != nErr {
			t.Fatalf("exit %d, bytes %d/%d (written %d/%d)", res.ExitCode, res.StdoutBytes, res.StderrBytes, out.n, errw.n)
		}
		var gotOut, gotErr [32]byte
		copy(gotOut[:], out.h.Sum(nil))
		copy(gotErr[:], errw.h.Sum(nil))
		if gotOut != patternHash(0, nOut) || gotErr != patternHash(1, nErr) {
			t.Fatalf("output differs from what the command wrote")
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	const mb = 1 << 20
	small := run(1*mb, 64<<10)
	large := run(10*mb, 64<<10)
	// Everything in this process allocates here, the fake daemon included:
	// the figure is an upper bound for the SDK. Streaming means it grows
	// linearly with the output (10x for 10x), and per byte it stays a small
	// constant: nothing holds or re-copies the whole output.
	t.Logf("allocated %.1f MB for 1 MB, %.1f MB for 10 MB of output (client and daemon)", float64(small)/mb, float64(large)/mb)
	if large > 20*small {
		t.Errorf("allocations grow faster than the output: %d bytes for 1 MB, %d for 10 MB", small, large)
	}
	if large > 40*10*mb {
		t.Errorf("allocated %d bytes for 10 MB of output", large)
	}
}

func TestBackground_IncrementalReadsLoseNothing(t *testing.T) {
	t.Parallel()
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			h := newHarness(t, harnessOptions{mode: mode})
			ctx := context.Background()
			const nOut, nErr = 3<<20 + 12345, 1<<20 + 777
			p, err := h.envd.StartBackground(ctx, fmt.Sprintf("emit %d %d 1000", nOut, nErr), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if p.Pid() == 0 {
				t.Fatal("no pid")
			}
			hOut, hErr := sha256.New(), sha256.New()
			var cur sandbox.Cursor
			var gotOut, gotErr int64
			reads := 0
			rng := rand.New(rand.NewPCG(1, 2))
			for {
				o, err := p.ReadOutput(cur, 1+rng.IntN(64<<10))
				if err != nil {
					t.Fatal(err)
				}
				reads++
				if o.Dropped {
					t.Fatal("bytes dropped below the buffer limit")
				}
				if o.Next.Stdout != cur.Stdout+int64(len(o.Stdout)) || o.Next.Stderr != cur.Stderr+int64(len(o.Stderr)) {
					t.Fatalf("cursor %+v + %d/%d bytes != next %+v", cur, len(o.Stdout), len(o.Stderr), o.Next)
				}
				hOut.Write(o.Stdout)
				hErr.Write(o.Stderr)
				gotOut += int64(len(o.Stdout))
				gotErr += int64(len(o.Stderr))
				cur = o.Next
				if !o.Running && !o.More {
					if o.Exit == nil || o.Exit.ExitCode != 0 {
						t.Fatalf("ended with %+v, err %v", o.Exit, p.Err())
					}
					break
				}
				if len(o.Stdout)+len(o.Stderr) == 0 {
					time.Sleep(time.Millisecond)
				}
			}
			if gotOut != nOut || gotErr != nErr {
				t.Fatalf("read %d/%d bytes, want %d/%d", gotOut, gotErr, nOut, nErr)
			}
			if sum(hOut) != patternHash(0, nOut) || sum(hErr) != patternHash(1, nErr) {
				t.Fatal("bytes lost, repeated or reordered")
			}
			t.Logf("%d reads", reads)
			// Reading again from the final cursor returns nothing new.
			o, err := p.ReadOutput(cur, 0)
			if err != nil || len(o.Stdout)+len(o.Stderr) != 0 || o.Next != cur {
				t.Fatalf("re-read: %+v, %v", o, err)
			}
			exit, err := p.Wait(ctx)
			if err != nil || exit.ExitCode != 0 || !exit.Exited {
				t.Fatalf("Wait = %+v, %v", exit, err)
			}
			_, err = p.ReadOutput(sandbox.Cursor{Stdout: nOut + 1}, 0)
			wantErr(t, err, "read process output", sandbox.InvalidArgument)
		})
	}
}

func TestBackground_BoundedBufferAndKill(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	const limit = 64 << 10
	p, err := h.envd.StartBackground(ctx, "yes", &sandbox.BackgroundOptions{BufferLimit: limit})
	if err != nil {
		t.Fatal(err)
	}
	// Wait for well more than the limit to have been produced.
	var o *sandbox.Output
	if !waitUntil(hangGuard, 5*time.Millisecond, func() bool {
		if o, err = p.ReadOutput(sandbox.Cursor{}, 0); err != nil {
			t.Fatal(err)
		}
		return o.Next.Stdout > 4*limit
	}) {
		t.Fatalf("only %d bytes after %v", o.Next.Stdout, hangGuard)
	}
	if !o.Dropped || len(o.Stdout) > limit || len(o.Stdout) == 0 || !o.Running {
		t.Fatalf("dropped %v, %d bytes held, running %v", o.Dropped, len(o.Stdout), o.Running)
	}
	if !strings.HasSuffix(string(o.Stdout), "y\n") {
		t.Errorf("tail %q", o.Stdout[len(o.Stdout)-4:])
	}
	// From the newest cursor nothing is dropped.
	o2, err := p.ReadOutput(o.Next, 1)
	if err != nil || o2.Dropped {
		t.Fatalf("read from fresh cursor: dropped %v, %v", o2.Dropped, err)
	}

	if err := p.Kill(ctx, sandbox.SIGKILL); err != nil {
		t.Fatal(err)
	}
	exit, err := p.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if exit.Exited || exit.ExitCode == 0 {
		t.Errorf("killed process exit %+v", exit)
	}
	select {
	case <-p.Done():
	default:
		t.Error("consuming goroutine still running after the end")
	}
	assertNoProcesses(t, h)
	if err := p.Kill(ctx, sandbox.SIGTERM); err == nil {
		t.Error("killing a finished process succeeded")
	} else {
		wantErr(t, err, sandbox.OpProcessSendSignal, sandbox.NotFound)
	}
	p.Close()

	// SIGTERM, and Close while the process still runs: the process stays,
	// the goroutine goes.
	p, err = h.envd.StartBackground(ctx, "sleep 30", nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	select {
	case <-p.Done():
	default:
		t.Fatal("goroutine outlived Close")
	}
	if _, err := p.Wait(ctx); err == nil {
		t.Error("Wait after Close succeeded")
	} else {
		noLeak(t, err)
	}
	procs, err := h.envd.ListProcesses(ctx)
	if err != nil || len(procs) != 1 || procs[0].Pid != p.Pid() || procs[0].Cmd != "/bin/bash" {
		t.Fatalf("after Close: %+v, %v", procs, err)
	}
	// Attach to it again, then terminate it.
	p2, err := h.envd.AttachProcess(ctx, p.Pid(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if err := p2.Kill(ctx, sandbox.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, hangGuard)
	defer cancel()
	exit, err = p2.Wait(wctx)
	if err != nil || exit.Exited {
		t.Fatalf("after SIGTERM: %+v, %v", exit, err)
	}
	assertNoProcesses(t, h)
}

func TestBackground_StdinInput(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	p, err := h.envd.StartBackground(ctx, "cat; echo done", &sandbox.BackgroundOptions{Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.SendInput(ctx, []byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	var got []byte
	var cur sandbox.Cursor
	if !waitUntil(hangGuard, 2*time.Millisecond, func() bool {
		o, err := p.ReadOutput(cur, 0)
		if err != nil {
			t.Fatal(err)
		}
		got, cur = append(got, o.Stdout...), o.Next
		return bytes.Equal(got, []byte("hello\n"))
	}) {
		t.Fatalf("echoed %q", got)
	}
	if err := p.SendInput(ctx, []byte{0, 255, 'x'}); err != nil {
		t.Fatal(err)
	}
	if err := p.CloseStdin(ctx); err != nil {
		t.Fatal(err)
	}
	exit, err := p.Wait(ctx)
	if err != nil || exit.ExitCode != 0 {
		t.Fatalf("Wait = %+v, %v", exit, err)
	}
	o, err := p.ReadOutput(cur, 0)
	if err != nil || string(o.Stdout) != "\x00\xffxdone\n" || o.Running {
		t.Fatalf("rest %q running %v, %v", o.Stdout, o.Running, err)
	}

	// Without Stdin, a reader sees end of file at once.
	out, err := h.envd.RunOutput(ctx, "cat; echo eof", nil)
	if err != nil || string(out.Stdout) != "eof\n" {
		t.Fatalf("cat without stdin: %q, %v", out.Stdout, err)
	}
	// Low-level: input to a process without stdin fails with a category.
	p3, err := h.envd.StartBackground(ctx, "sleep 30", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p3.Close()
	err = p3.SendInput(ctx, []byte("x"))
	wantErr(t, err, sandbox.OpProcessSendInput, sandbox.ProviderError)
	_ = p3.Kill(ctx, sandbox.SIGKILL)
}

func TestProcess_LowLevelStream(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	st, err := h.envd.StartProcess(ctx, &sandbox.ProcessConfig{Cmd: "/bin/bash", Args: []string{"-c", "echo a; sleep 0.05; echo b >&2; exit 4"}, Tag: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	procs, err := h.envd.ListProcesses(ctx)
	if err != nil || len(procs) != 1 || procs[0].Tag != "t1" || procs[0].Pid != st.Pid() || len(procs[0].Args) != 2 {
		t.Fatalf("List = %+v, %v", procs, err)
	}
	var out, errb []byte
	var exit *sandbox.ProcessExit
	for st.Receive() {
		ev := st.Event()
		out, errb = append(out, ev.Stdout...), append(errb, ev.Stderr...)
		if ev.Exit != nil {
			exit = ev.Exit
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if string(out) != "a\n" || string(errb) != "b\n" || exit == nil || exit.ExitCode != 4 || exit.Status != "exit status 4" {
		t.Fatalf("out %q err %q exit %+v", out, errb, exit)
	}
	_, err = h.envd.ConnectProcess(ctx, 99999)
	wantErr(t, err, sandbox.OpProcessConnect, sandbox.NotFound)
	err = h.envd.SendSignal(ctx, 99999, sandbox.SIGKILL)
	wantErr(t, err, sandbox.OpProcessSendSignal, sandbox.NotFound)
	err = h.envd.CloseStdin(ctx, 99999)
	wantErr(t, err, sandbox.OpProcessCloseStdin, sandbox.NotFound)
}

// TestBackground_OutlivesTheStartContext checks that ctx bounds only the
// start: its deadline is not sent to the daemon, and its end does not stop
// the command or the collection of its output.
//
// The command waits for a gate file the test writes only after ctx ended,
// so its output proves it outlived ctx; the daemon sees no
// Connect-Timeout-Ms on the start, so ctx's deadline cannot reach it.
func TestBackground_OutlivesTheStartContext(t *testing.T) {
	var startTimeouts []string
	var mu sync.Mutex
	h := newHarness(t, harnessOptions{observe: func(r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/process.Process/Start") {
			mu.Lock()
			startTimeouts = append(startTimeouts, r.Header.Get("Connect-Timeout-Ms"))
			mu.Unlock()
		}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	p, err := h.envd.StartBackground(ctx, "while [ ! -e /tmp/gate ]; do sleep 0.01; done; echo late", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cancel()
	if err := h.daemon.FS().WriteFile("/tmp/gate", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(startTimeouts) != 1 || startTimeouts[0] != "" {
		t.Errorf("Start requests' Connect-Timeout-Ms %q, want one without", startTimeouts)
	}
	mu.Unlock()
	wctx, wcancel := context.WithTimeout(context.Background(), hangGuard)
	defer wcancel()
	exit, err := p.Wait(wctx)
	if err != nil || exit.ExitCode != 0 || !exit.Exited {
		t.Fatalf("Wait = %+v, %v", exit, err)
	}
	o, err := p.ReadOutput(sandbox.Cursor{}, 0)
	if err != nil || string(o.Stdout) != "late\n" || o.Running || o.Exit == nil {
		t.Fatalf("ReadOutput = %+v, %v", o, err)
	}
	wctx, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := p.Wait(wctx); err != nil {
		t.Errorf("Wait on an ended process with a done context: %v", err)
	}
}

// failingWriter accepts n bytes, then fails.
type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		return 0, errors.New("disk full")
	}
	w.n -= len(p)
	return len(p), nil
}

func TestRun_WriterFailureKillsTheCommand(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	_, err := h.envd.Run(ctx, "echo a; echo b >&2; yes", &sandbox.CommandOptions{Stdout: &failingWriter{n: 100}})
	if got := wantErr(t, err, sandbox.OpProcessStart, sandbox.Internal); got.Field != "stdout" {
		t.Errorf("field %q", got.Field)
	}
	assertNoProcesses(t, h)
	_, err = h.envd.Run(ctx, "echo b >&2; sleep 30", &sandbox.CommandOptions{Stderr: &failingWriter{}})
	if got := wantErr(t, err, sandbox.OpProcessStart, sandbox.Internal); got.Field != "stderr" {
		t.Errorf("field %q", got.Field)
	}
	assertNoProcesses(t, h)
}

// TestBackground_NoGoroutineOutlivesItsProcess starts, reads, kills and
// closes background commands and checks that the goroutine count returns
// to where it was once idle connections are closed.
func TestBackground_NoGoroutineOutlivesItsProcess(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	settle := func() int {
		h.client.CloseIdleConnections()
		h.srv.CloseClientConnections()
		runtime.GC()
		return runtime.NumGoroutine()
	}
	if _, err := h.envd.RunOutput(ctx, "true", nil); err != nil {
		t.Fatal(err)
	}
	base := settle()
	for range 10 {
		p, err := h.envd.StartBackground(ctx, "emit 100000 100 1000", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		p.Close()
		p, err = h.envd.StartBackground(ctx, "sleep 30", nil)
		if err != nil {
			t.Fatal(err)
		}
		p.Close() // the goroutine goes; the process stays until killed
		if err := p.Kill(ctx, sandbox.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if _, err := h.envd.UploadMultipart(ctx, "/tmp/x", strings.NewReader("x")); err != nil {
			t.Fatal(err)
		}
	}
	assertNoProcesses(t, h)
	n := 0
	if !waitUntil(hangGuard, 20*time.Millisecond, func() bool { n = settle(); return n <= base }) {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines, %d before:\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}
