package conformance

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// bgOut is get_background_command's result (BG-2).
type bgOut struct {
	Running    bool   `json:"running"`
	ExitCode   *int   `json:"exit_code"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	NextCursor string `json:"next_cursor"`
	Truncated  bool   `json:"truncated"`
}

// bgPrompt is how long start_background_command may take for a command
// that runs much longer.
const bgPrompt = 5 * time.Second

func backgroundSpecs() []Spec {
	return []Spec{
		{ID: "background.start-returns-at-once", Rules: []string{"BG-1", "BG-2"}, Tools: []string{"start_background_command", "get_background_command", "kill_background_command"}, Body: specStartReturnsAtOnce,
			Title: "start_background_command returns command_id and sandbox_id at once for a long command, which then reads as running with a null exit_code"},
		{ID: "background.exit-status", Rules: []string{"BG-1", "BG-2"}, Tools: []string{"start_background_command", "get_background_command", "run_command"}, Body: specExitStatus,
			Title: "get_background_command reports running false and the exit_code once the command ended, with its cwd and envs honoured"},
		{ID: "background.cursor-no-loss", Rules: []string{"BG-2"}, Tools: []string{"start_background_command", "get_background_command", "run_command"}, Body: specCursorNoLoss,
			Title: "reading a running command from next_cursor in small pieces returns every byte of stdout and stderr exactly once"},
		{ID: "background.max-bytes-backlog", Rules: []string{"BG-2"}, Tools: []string{"start_background_command", "get_background_command", "run_command"}, Body: specMaxBytesBacklog,
			Title: "output that piled up past max_bytes before the first read comes back at most max_bytes per read, every byte exactly once"},
		{ID: "background.kill", Rules: []string{"BG-3"}, Tools: []string{"start_background_command", "get_background_command", "kill_background_command", "run_command"}, Body: specKill,
			Title: "kill_background_command with SIGTERM (the default) or SIGKILL answers success true and the command stops"},
		{ID: "background.unknown-id-not-found", Rules: []string{"BG-3"}, Tools: []string{"start_background_command", "get_background_command", "kill_background_command"}, Body: specUnknownIDNotFound,
			Title: "get_background_command and kill_background_command answer not_found for a command_id this session never got"},
		{ID: "background.foreign-session-not-found", Rules: []string{"BG-3", "BG-4"}, Tools: []string{"start_background_command", "get_background_command", "kill_background_command"}, Body: specForeignSessionNotFound,
			Title: "a command_id is valid only in the session that started it: another session gets not_found and cannot stop it"},
		{ID: "background.implicit-create", Rules: []string{"SESSION-2", "BG-1"}, Tools: []string{"start_background_command", "get_sandbox"}, NeedsFake: true, Body: specBackgroundImplicitCreate,
			Title: "start_background_command without sandbox_id and without a default creates one sandbox, names it in sandbox_id and makes it the owned default"},
		{ID: "background.renews-owned", Rules: []string{"RENEW-1"}, Tools: []string{"create_sandbox", "start_background_command", "get_background_command", "kill_background_command"}, NeedsFake: true, Body: specBackgroundRenewsOwned,
			Title: "start, get and kill of a background command on an owned sandbox each renew it to the session's renewal policy"},
		{ID: "background.external-no-renew", Rules: []string{"RENEW-2", "BG-1"}, Tools: []string{"start_background_command", "get_background_command", "kill_background_command"}, NeedsFake: true, Body: specBackgroundExternalNoRenew,
			Title: "background commands on an external sandbox reach it through connect and never renew it"},
	}
}

func specStartReturnsAtOnce(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	bgStart(ctx, tc, s, map[string]any{"command": "true"}) // the sandbox exists before the clock starts
	start := time.Now()
	id, sb := bgStart(ctx, tc, s, map[string]any{"command": "echo started; sleep 30; echo never"})
	gomega.Expect(time.Since(start)).To(gomega.BeNumerically("<", tc.allow(ctx, bgPrompt)), "start_background_command must not wait for the command")
	gomega.Expect(sb).NotTo(gomega.BeEmpty())
	var o bgOut
	gomega.Expect(tc.WaitFor(ctx, 5*time.Second, func() bool {
		o = bgGet(ctx, tc, s, id, "", 0)
		return o.Stdout != ""
	})).To(gomega.BeTrue(), "the command's first output never arrived")
	gomega.Expect(o.Running).To(gomega.BeTrue(), "a sleeping command is running")
	gomega.Expect(o.ExitCode).To(gomega.BeNil(), "exit_code is null while the command runs")
	gomega.Expect(o.Stdout).To(gomega.Equal("started\n"))
	gomega.Expect(o.NextCursor).NotTo(gomega.BeEmpty(), "next_cursor is always given")
	tc.ExpectSuccess(s.Call(ctx, "kill_background_command", map[string]any{"command_id": id, "signal": "SIGKILL"}))
}

func specExitStatus(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	dir := scratchDir("bgcwd")
	s.runCommand(ctx, "mkdir -p "+dir)
	id, _ := bgStart(ctx, tc, s, map[string]any{
		"command": `pwd; echo "[$SBK_BG]"; echo to-err >&2; exit 7`,
		"cwd":     dir,
		"envs":    map[string]string{"SBK_BG": "bg value"},
	})
	o := bgWaitEnd(ctx, tc, s, id)
	gomega.Expect(o.ExitCode).NotTo(gomega.BeNil(), "exit_code is set once the command ended")
	gomega.Expect(*o.ExitCode).To(gomega.Equal(7))
	all := bgReadAll(ctx, tc, s, id, 0)
	gomega.Expect(all.stdout).To(gomega.Equal(dir+"\n[bg value]\n"), "stdout: cwd and envs are honoured")
	gomega.Expect(all.stderr).To(gomega.Equal("to-err\n"), "stderr is separate from stdout")

	id, _ = bgStart(ctx, tc, s, map[string]any{"command": "echo fine"})
	o = bgWaitEnd(ctx, tc, s, id)
	gomega.Expect(o.ExitCode).NotTo(gomega.BeNil())
	gomega.Expect(*o.ExitCode).To(gomega.Equal(0))
}

func specCursorNoLoss(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	s.runCommand(ctx, "true")
	id, _ := bgStart(ctx, tc, s, map[string]any{
		"command": `for i in $(seq 1 200); do echo line-$i; if [ $((i % 10)) -eq 0 ]; then echo err-$i >&2; fi; sleep 0.005; done`,
	})
	var wantOut, wantErr strings.Builder
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&wantOut, "line-%d\n", i)
		if i%10 == 0 {
			fmt.Fprintf(&wantErr, "err-%d\n", i)
		}
	}
	all := bgReadAll(ctx, tc, s, id, 37)
	gomega.Expect(all.sawRunning).To(gomega.BeTrue(), "the reads must have overlapped the command's run")
	gomega.Expect(all.reads).To(gomega.BeNumerically(">", 10), "small max_bytes must split the output over many reads")
	gomega.Expect(all.stdout).To(gomega.Equal(wantOut.String()), "stdout read piecewise from next_cursor: no byte lost or repeated")
	gomega.Expect(all.stderr).To(gomega.Equal(wantErr.String()), "stderr read piecewise from next_cursor: no byte lost or repeated")
	gomega.Expect(all.last.ExitCode).NotTo(gomega.BeNil())
	gomega.Expect(*all.last.ExitCode).To(gomega.Equal(0))
}

// backlogStdoutLines and backlogStderrLines are what the backlog spec's
// command writes before anything reads it: 2,790 bytes, many times
// backlogMaxBytes.
const (
	backlogStdoutLines = 300
	backlogStderrLines = 30
	backlogMaxBytes    = 64
)

func specMaxBytesBacklog(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	dir := scratchDir("bgbacklog")
	s.runCommand(ctx, "mkdir -p "+dir)
	marker := dir + "/written"
	var wantOut, wantErr strings.Builder
	for i := 1; i <= backlogStdoutLines; i++ {
		fmt.Fprintf(&wantOut, "out-%03d\n", i)
	}
	for i := 1; i <= backlogStderrLines; i++ {
		fmt.Fprintf(&wantErr, "err-%03d\n", i)
	}
	// The command writes all of its output at once, says so in a file, and
	// ends: no get_background_command runs before it has ended, so the
	// first read meets the whole backlog, whatever the timing.
	id, _ := bgStart(ctx, tc, s, map[string]any{
		"command": fmt.Sprintf(`for i in $(seq -w 1 %d); do echo out-$i; done; for i in $(seq -w 1 %d); do echo err-0$i >&2; done; touch %s`,
			backlogStdoutLines, backlogStderrLines, marker),
	})
	gomega.Expect(tc.WaitFor(ctx, 10*time.Second, func() bool {
		return s.runCommand(ctx, "test -f "+marker+" && echo yes || true").Stdout == "yes\n"
	})).To(gomega.BeTrue(), "the command never finished writing its output")
	// BG-2: one read returns at most max_bytes of stdout and stderr
	// together (bgGet checks every read), from the first one on. Reading
	// from the start until the command has ended makes sure a read meets
	// the whole backlog, however late its output reached the server.
	gomega.Expect(tc.WaitFor(ctx, 10*time.Second, func() bool {
		return !bgGet(ctx, tc, s, id, "", backlogMaxBytes).Running
	})).To(gomega.BeTrue(), "the command did not end")
	all := bgReadAll(ctx, tc, s, id, backlogMaxBytes)
	total := wantOut.Len() + wantErr.Len()
	gomega.Expect(all.reads).To(gomega.BeNumerically(">=", total/backlogMaxBytes),
		"%d bytes of backlog read with max_bytes %d took only %d reads", total, backlogMaxBytes, all.reads)
	gomega.Expect(all.stdout).To(gomega.Equal(wantOut.String()), "stdout read from the backlog in max_bytes pieces: no byte lost or repeated")
	gomega.Expect(all.stderr).To(gomega.Equal(wantErr.String()), "stderr read from the backlog in max_bytes pieces: no byte lost or repeated")
}

func specKill(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	dir := scratchDir("bgkill")
	s.runCommand(ctx, "mkdir -p "+dir)
	// Each command waits for a gate file the spec creates only once every
	// kill has been answered and seen to stop its command, then writes its
	// marker: a marker written is a command that outlived its kill,
	// however slow the machine (a fixed sleep before the write was a race
	// with the kill under load). A control command that is never killed
	// waits for the same gate: its marker shows that a live command has
	// seen the gate by the time the spec looks.
	gate := dir + "/gate"
	waitGate := func(marker string) string {
		return "echo up; while [ ! -e " + gate + " ]; do sleep 0.05; done; echo late > " + marker + "; sleep 30"
	}
	control, _ := bgStart(ctx, tc, s, map[string]any{"command": waitGate(dir + "/control")})
	for _, sig := range []string{"", "SIGTERM", "SIGKILL"} {
		marker := dir + "/after-" + strings.ToLower(sig)
		id, _ := bgStart(ctx, tc, s, map[string]any{"command": waitGate(marker)})
		gomega.Expect(tc.WaitFor(ctx, 5*time.Second, func() bool { return bgGet(ctx, tc, s, id, "", 0).Stdout != "" })).To(gomega.BeTrue())
		args := map[string]any{"command_id": id}
		if sig != "" {
			args["signal"] = sig
		}
		r := tc.ExpectSuccess(s.Call(ctx, "kill_background_command", args))
		gomega.Expect(r.Structured).To(gomega.Equal(map[string]any{"success": true}), "kill_background_command %q result", sig)
		var o bgOut
		gomega.Expect(tc.WaitFor(ctx, 3*time.Second, func() bool {
			o = bgGet(ctx, tc, s, id, "", 0)
			return !o.Running
		})).To(gomega.BeTrue(), "signal %q: the command must stop", sig)
		gomega.Expect(o.ExitCode).NotTo(gomega.BeNil(), "signal %q: a stopped command has an exit_code", sig)
		gomega.Expect(*o.ExitCode).NotTo(gomega.Equal(0), "signal %q: a killed command did not succeed", sig)
	}
	s.runCommand(ctx, "touch "+gate)
	gomega.Expect(tc.WaitFor(ctx, 10*time.Second, func() bool {
		return s.runCommand(ctx, "test -e "+dir+"/control && echo yes || true").Stdout == "yes\n"
	})).To(gomega.BeTrue(), "the control command never saw the gate")
	out := s.runCommand(ctx, "ls "+dir)
	gomega.Expect(out.Stdout).To(gomega.Equal("control\ngate\n"), "a killed command must not go on running")
	tc.ExpectSuccess(s.Call(ctx, "kill_background_command", map[string]any{"command_id": control, "signal": "SIGKILL"}))
}

func specUnknownIDNotFound(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	id, _ := bgStart(ctx, tc, s, map[string]any{"command": "sleep 30"})
	unknown := bgMutateID(id)
	tc.ExpectToolError(s.Call(ctx, "get_background_command", map[string]any{"command_id": unknown}), "not_found")
	tc.ExpectToolError(s.Call(ctx, "kill_background_command", map[string]any{"command_id": unknown}), "not_found")
	tc.ExpectToolError(s.Call(ctx, "kill_background_command", map[string]any{"command_id": unknown, "signal": "SIGKILL"}), "not_found")
	o := bgGet(ctx, tc, s, id, "", 0)
	gomega.Expect(o.Running).To(gomega.BeTrue(), "the real command is untouched")
	tc.ExpectSuccess(s.Call(ctx, "kill_background_command", map[string]any{"command_id": id, "signal": "SIGKILL"}))
}

func specForeignSessionNotFound(ctx context.Context, tc *TestContext) {
	a := tc.Connect(ctx)
	b := tc.Connect(ctx)
	id, _ := bgStart(ctx, tc, a, map[string]any{"command": "echo mine; sleep 30"})
	gomega.Expect(tc.WaitFor(ctx, 5*time.Second, func() bool { return bgGet(ctx, tc, a, id, "", 0).Stdout != "" })).To(gomega.BeTrue())
	r := b.Call(ctx, "get_background_command", map[string]any{"command_id": id})
	tc.ExpectToolError(r, "not_found")
	gomega.Expect(r.JSON).NotTo(gomega.ContainSubstring("mine"), "another session must not see the output")
	tc.ExpectToolError(b.Call(ctx, "kill_background_command", map[string]any{"command_id": id, "signal": "SIGKILL"}), "not_found")
	time.Sleep(100 * time.Millisecond)
	o := bgGet(ctx, tc, a, id, "", 0)
	gomega.Expect(o.Running).To(gomega.BeTrue(), "the foreign kill must not stop the command")
	tc.ExpectSuccess(a.Call(ctx, "kill_background_command", map[string]any{"command_id": id, "signal": "SIGKILL"}))
}

func specBackgroundImplicitCreate(ctx context.Context, tc *TestContext) {
	tc.expectImplicitCreate(ctx, dpImplicitCase{"start_background_command", map[string]any{"command": "echo one"}}, dpImplicitCase{"start_background_command", map[string]any{"command": "echo two"}})
}

func specBackgroundRenewsOwned(ctx context.Context, tc *TestContext) {
	var cmd string
	s := tc.Connect(ctx)
	id := s.createWithTimeout(ctx, 150)
	steps := []struct {
		tool     string
		args     func() map[string]any
		wantEnvd bool
	}{
		{"start_background_command", func() map[string]any { return map[string]any{"command": "sleep 30", "sandbox_id": id} }, true},
		{"get_background_command", func() map[string]any { return map[string]any{"command_id": cmd} }, false},
		{"kill_background_command", func() map[string]any { return map[string]any{"command_id": cmd, "signal": "SIGKILL"} }, true},
	}
	for _, st := range steps {
		tc.Clock.Advance(5 * time.Second)
		mark := tc.Fake.Journal().Len()
		r := tc.ExpectSuccess(s.Call(ctx, st.tool, st.args()))
		if st.tool == "start_background_command" {
			cmd = r.String("command_id")
			gomega.Expect(r.String("sandbox_id")).To(gomega.Equal(id))
		}
		tc.expectRenewedSince(st.tool, id, mark, 150, st.wantEnvd)
	}
}

func specBackgroundExternalNoRenew(ctx context.Context, tc *TestContext) {
	ext := tc.Seed(fakeprovider.SandboxSeed{})
	s := tc.Connect(ctx)
	mark := tc.Fake.Journal().Len()
	id, sb := bgStart(ctx, tc, s, map[string]any{"command": "echo ext; sleep 30", "sandbox_id": ext})
	gomega.Expect(sb).To(gomega.Equal(ext), "sandbox_id names the external sandbox the command runs in")
	gomega.Expect(tc.WaitFor(ctx, 5*time.Second, func() bool { return bgGet(ctx, tc, s, id, "", 0).Stdout == "ext\n" })).To(gomega.BeTrue())
	tc.ExpectSuccess(s.Call(ctx, "kill_background_command", map[string]any{"command_id": id, "signal": "SIGKILL"}))
	tc.expectExternalUntouchedSince("background tools", ext, mark, true)
	gomega.Expect(tc.liveCreated()).To(gomega.BeEmpty(), "naming an external sandbox creates nothing")
}

// bgStart starts a background command and returns its command_id and
// sandbox_id.
func bgStart(ctx context.Context, tc *TestContext, s *Session, args map[string]any) (string, string) {
	ginkgo.GinkgoHelper()
	var out struct {
		CommandID string `json:"command_id"`
		SandboxID string `json:"sandbox_id"`
	}
	tc.decode(s.Call(ctx, "start_background_command", args), &out, "command_id", "sandbox_id")
	gomega.Expect(out.CommandID).NotTo(gomega.BeEmpty(), "start_background_command: empty command_id")
	return out.CommandID, out.SandboxID
}

// bgGet reads a command's output from cursor ("" leaves it out) with
// max_bytes (0 leaves it out).
func bgGet(ctx context.Context, tc *TestContext, s *Session, id, cursor string, maxBytes int) bgOut {
	ginkgo.GinkgoHelper()
	args := map[string]any{"command_id": id}
	if cursor != "" {
		args["cursor"] = cursor
	}
	if maxBytes > 0 {
		args["max_bytes"] = maxBytes
	}
	var o bgOut
	tc.decode(s.Call(ctx, "get_background_command", args), &o, "running", "exit_code", "stdout", "stderr", "next_cursor", "truncated")
	if o.Running {
		gomega.Expect(o.ExitCode).To(gomega.BeNil(), "exit_code must be null while the command runs")
	}
	if maxBytes > 0 {
		gomega.Expect(len(o.Stdout)+len(o.Stderr)).To(gomega.BeNumerically("<=", maxBytes), "BG-2: a read returns at most max_bytes of stdout and stderr together")
	}
	return o
}

// bgWaitEnd polls until the command no longer runs.
func bgWaitEnd(ctx context.Context, tc *TestContext, s *Session, id string) bgOut {
	ginkgo.GinkgoHelper()
	var o bgOut
	gomega.Expect(tc.WaitFor(ctx, 10*time.Second, func() bool {
		o = bgGet(ctx, tc, s, id, "", 0)
		return !o.Running
	})).To(gomega.BeTrue(), "the command did not end")
	return o
}

// bgAll is everything read from a command by following next_cursor.
type bgAll struct {
	stdout, stderr string
	reads          int
	sawRunning     bool
	last           bgOut
}

// bgReadAll follows next_cursor from the start until the command has ended
// and a read returns nothing more.
func bgReadAll(ctx context.Context, tc *TestContext, s *Session, id string, maxBytes int) bgAll {
	ginkgo.GinkgoHelper()
	var all bgAll
	var out, errs strings.Builder
	cursor := ""
	deadline := time.Now().Add(tc.allow(ctx, 20*time.Second))
	for {
		gomega.Expect(time.Now().Before(deadline)).To(gomega.BeTrue(), "the command's output did not end within 20 s (%d reads)", all.reads)
		o := bgGet(ctx, tc, s, id, cursor, maxBytes)
		all.reads++
		all.sawRunning = all.sawRunning || o.Running
		out.WriteString(o.Stdout)
		errs.WriteString(o.Stderr)
		gomega.Expect(o.NextCursor).NotTo(gomega.BeEmpty(), "next_cursor is always given")
		cursor = o.NextCursor
		all.last = o
		if !o.Running && o.Stdout == "" && o.Stderr == "" {
			break
		}
		if o.Running && o.Stdout == "" && o.Stderr == "" {
			time.Sleep(20 * time.Millisecond)
		}
	}
	all.stdout, all.stderr = out.String(), errs.String()
	return all
}

// bgMutateID changes the last character of a command_id into another one
// of the same kind, giving an ID of the server's own form that it never
// issued (with overwhelming likelihood).
func bgMutateID(id string) string {
	gomega.Expect(id).NotTo(gomega.BeEmpty())
	last := id[len(id)-1]
	var repl byte
	switch {
	case last >= '0' && last <= '8', last >= 'a' && last <= 'e', last >= 'A' && last <= 'E':
		repl = last + 1
	case last == '9':
		repl = '0'
	case last == 'f':
		repl = 'a'
	case last == 'F':
		repl = 'A'
	case last >= 'g' && last <= 'z', last >= 'G' && last <= 'Z':
		repl = last - 1
	default:
		repl = '0'
	}
	return id[:len(id)-1] + string(repl)
}
