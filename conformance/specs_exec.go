package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// execCap is the default output cap per stream (EXEC-3), and
// execMarkerSlack how many bytes the server may spend on its "cut here"
// marker beyond it.
const (
	execCap         = 64 << 10
	execMarkerSlack = 256
)

func execSpecs() []Spec {
	return []Spec{
		{ID: "exec.run-command-streams", Rules: []string{"EXEC-1"}, Tools: []string{"run_command"}, Body: specRunCommandStreams,
			Title: "run_command returns stdout and stderr separately, with exit_code 0 and truncated false"},
		{ID: "exec.nonzero-exit-is-result", Rules: []string{"EXEC-1"}, Tools: []string{"run_command"}, Body: specNonzeroExitIsResult,
			Title: "run_command reports a non-zero exit status as a successful result with that exit_code, not as a tool error"},
		{ID: "exec.cwd-and-envs", Rules: []string{"EXEC-1"}, Tools: []string{"run_command"}, Body: specCwdAndEnvs,
			Title: "run_command runs in the given cwd with the given envs added to the environment"},
		{ID: "exec.timeout-is-tool-error", Rules: []string{"EXEC-1"}, Tools: []string{"run_command"}, Body: specTimeoutIsToolError,
			Title: "run_command fails promptly with a tool error of category timeout when the command outlives timeout, and kills it"},
		{ID: "exec.run-code-bash", Rules: []string{"EXEC-2"}, Tools: []string{"run_code"}, Body: specRunCodeBash,
			Title: "run_code with language bash runs the program and returns the same shape as run_command"},
		{ID: "exec.run-code-default-python", Rules: []string{"EXEC-2"}, Tools: []string{"run_code"}, Body: specRunCodeDefaultPython,
			Title: "run_code without language runs Python: the program's output, or exit_code 127 or a categorized tool error when the template has no Python"},
		{ID: "exec.run-code-javascript", Rules: []string{"EXEC-2"}, Tools: []string{"run_code"}, Body: specRunCodeJavascript,
			Title: "run_code with language javascript runs the program with Node: its output, or exit_code 127 or a categorized tool error when the template has no Node"},
		{ID: "exec.output-cap-head-tail", Rules: []string{"EXEC-3", "EXEC-2"}, Tools: []string{"run_command", "run_code"}, Body: specOutputCapHeadTail,
			Title: "run_command and run_code cut a stream over 64 KiB in the middle, keeping its head and tail, and sets truncated"},
		implicitCreateSpec("exec.implicit-create", "run_command", []string{"run_command", "run_code", "get_sandbox"}, specImplicitCreate),
		implicitCreateSpec("exec.run-code-implicit-create", "run_code", []string{"run_command", "run_code", "get_sandbox"}, specRunCodeImplicitCreate),
		renewsOwnedSpec("exec.renews-owned", []string{"run_command", "run_code"}, specRenewsOwned),
		{ID: "exec.renews-implicit-default", Rules: []string{"RENEW-1"}, Tools: []string{"run_command"}, NeedsFake: true, Body: specRenewsImplicitDefault,
			Title: "run_command renews an implicitly created sandbox to 300 s, the policy of a sandbox created without timeout"},
		{ID: "exec.external-connect-no-renew", Rules: []string{"RENEW-2", "EXEC-1"}, Tools: []string{"run_command", "run_code"}, NeedsFake: true, Body: specExternalConnectNoRenew,
			Title: "run_command and run_code on an external sandbox reach it through connect and never renew, own or destroy it"},
	}
}

func specRunCommandStreams(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	out := s.exec(ctx, "run_command", map[string]any{
		"command": "echo out-1; echo err-1 >&2; printf 'out-2\\n'; printf 'err-2\\n' >&2",
	})
	gomega.Expect(out.Stdout).To(gomega.Equal("out-1\nout-2\n"), "stdout holds exactly what went to stdout")
	gomega.Expect(out.Stderr).To(gomega.Equal("err-1\nerr-2\n"), "stderr holds exactly what went to stderr")
	gomega.Expect(out.ExitCode).To(gomega.Equal(0))
	gomega.Expect(out.Truncated).To(gomega.BeFalse())
}

func specNonzeroExitIsResult(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	for _, c := range []struct {
		command        string
		code           int
		stdout, stderr string
	}{
		{"exit 3", 3, "", ""},
		{"false", 1, "", ""},
		{"echo partial; echo oops >&2; exit 42", 42, "partial\n", "oops\n"},
		{"no-such-command-sbk", 127, "", ""},
	} {
		out := s.exec(ctx, "run_command", map[string]any{"command": c.command})
		gomega.Expect(out.ExitCode).To(gomega.Equal(c.code), "%q: exit_code", c.command)
		gomega.Expect(out.Stdout).To(gomega.Equal(c.stdout), "%q: stdout", c.command)
		if c.code != 127 {
			gomega.Expect(out.Stderr).To(gomega.Equal(c.stderr), "%q: stderr", c.command)
		} else {
			gomega.Expect(out.Stderr).NotTo(gomega.BeEmpty(), "%q: the shell explains a missing command on stderr", c.command)
		}
	}
}

func specCwdAndEnvs(ctx context.Context, tc *TestContext) {
	execExpectDefines(tc, "run_command", "EXEC-1", "cwd", "envs")
	s := tc.Connect(ctx)
	dir := scratchDir("cwd")
	s.runCommand(ctx, "mkdir -p "+dir+"/inner")
	out := s.exec(ctx, "run_command", map[string]any{
		"command": `pwd; echo "[$SBK_ONE]"; echo "[$SBK_TWO]"; ls`,
		"cwd":     dir,
		"envs":    map[string]string{"SBK_ONE": "first value", "SBK_TWO": "x=y;$HOME 'q'"},
	})
	gomega.Expect(out.ExitCode).To(gomega.Equal(0), "stderr: %s", out.Stderr)
	gomega.Expect(out.Stdout).To(gomega.Equal(dir+"\n[first value]\n[x=y;$HOME 'q']\ninner\n"),
		"pwd is cwd, the envs arrive verbatim (no shell expansion of their values), and relative paths resolve against cwd")
	// Without cwd and envs the variables are gone: envs belong to one command.
	out = s.exec(ctx, "run_command", map[string]any{"command": `echo "[${SBK_ONE:-unset}]"`})
	gomega.Expect(out.Stdout).To(gomega.Equal("[unset]\n"), "envs of one call must not leak into the next")
}

func specTimeoutIsToolError(ctx context.Context, tc *TestContext) {
	execExpectDefines(tc, "run_command", "EXEC-1", "timeout")
	s := tc.Connect(ctx)
	dir := scratchDir("timeout")
	s.runCommand(ctx, "mkdir -p "+dir) // the sandbox exists before the clock starts
	marker := dir + "/late"
	cctx, cancel := context.WithTimeout(ctx, tc.allow(ctx, 10*time.Second))
	defer cancel()
	start := time.Now()
	r := s.Call(cctx, "run_command", map[string]any{
		"command": "sleep 2; echo late > " + marker + "; sleep 30",
		"timeout": 1,
	})
	elapsed := time.Since(start)
	gomega.Expect(r.Err).NotTo(gomega.HaveOccurred(), "no answer within 10 s for a command with timeout 1 s")
	tc.ExpectToolError(r, "timeout")
	gomega.Expect(elapsed).To(gomega.BeNumerically("<", tc.allow(ctx, 5*time.Second)), "the timeout error must come soon after timeout, not when the command ends")
	// The command was killed: what it would have done after 2 s never happens.
	time.Sleep(time.Until(start.Add(2500 * time.Millisecond)))
	out := s.exec(ctx, "run_command", map[string]any{"command": "test -e " + marker + " && echo present || echo absent"})
	gomega.Expect(out.Stdout).To(gomega.Equal("absent\n"), "a command that outlives timeout must be killed")
	// The sandbox still works after the timeout.
	gomega.Expect(s.runCommand(ctx, "echo alive").Stdout).To(gomega.Equal("alive\n"))
}

func specRunCodeBash(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	code := "greet() { echo \"hello $1\"; }\ngreet world\necho 'to stderr' >&2\nfor i in 1 2 3; do printf '%s,' $i; done\necho\nexit 4\n"
	out := s.exec(ctx, "run_code", map[string]any{"code": code, "language": "bash"})
	gomega.Expect(out.Stdout).To(gomega.Equal("hello world\n1,2,3,\n"))
	gomega.Expect(out.Stderr).To(gomega.Equal("to stderr\n"))
	gomega.Expect(out.ExitCode).To(gomega.Equal(4), "a non-zero exit of the program is a result")
	gomega.Expect(out.Truncated).To(gomega.BeFalse())
}

func specRunCodeDefaultPython(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	r := s.Call(ctx, "run_code", map[string]any{"code": "import sys\nprint('py-' + 'ok')\nsys.exit(0)\n"})
	execExpectMissingInterpreterOr(tc, r, "py-ok\n", "run_code default language")
}

func specRunCodeJavascript(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	r := s.Call(ctx, "run_code", map[string]any{"code": "console.log('js-' + 'ok'); process.exit(0);\n", "language": "javascript"})
	execExpectMissingInterpreterOr(tc, r, "js-ok\n", "run_code javascript")
}

func specOutputCapHeadTail(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	full := execSeq(100000)
	out := s.exec(ctx, "run_command", map[string]any{"command": "seq 1 100000; echo small-err >&2"})
	gomega.Expect(out.ExitCode).To(gomega.Equal(0))
	gomega.Expect(out.Truncated).To(gomega.BeTrue(), "588895 bytes of stdout exceed the cap")
	execExpectHeadTail("stdout", out.Stdout, full)
	gomega.Expect(out.Stderr).To(gomega.Equal("small-err\n"), "the cap is per stream: a small stderr stays whole")

	out = s.exec(ctx, "run_command", map[string]any{"command": "echo small-out; seq 1 100000 >&2"})
	gomega.Expect(out.Truncated).To(gomega.BeTrue(), "a cut stderr sets truncated too")
	execExpectHeadTail("stderr", out.Stderr, full)
	gomega.Expect(out.Stdout).To(gomega.Equal("small-out\n"))

	// run_code is capped the same way.
	out = s.exec(ctx, "run_code", map[string]any{"code": "seq 1 100000", "language": "bash"})
	gomega.Expect(out.Truncated).To(gomega.BeTrue(), "run_code: a cut stdout sets truncated")
	execExpectHeadTail("run_code stdout", out.Stdout, full)

	// Output that fits is never cut or marked.
	fits := execSeq(10000) // 48894 bytes
	out = s.exec(ctx, "run_command", map[string]any{"command": "seq 1 10000"})
	gomega.Expect(out.Truncated).To(gomega.BeFalse(), "48894 bytes fit in the cap")
	gomega.Expect(out.Stdout == fits).To(gomega.BeTrue(), "output under the cap must come back whole")
}

func specImplicitCreate(ctx context.Context, tc *TestContext) {
	tc.expectImplicitCreate(ctx, dpImplicitCase{"run_command", map[string]any{"command": "echo one > /tmp/sbk-implicit"}}, dpImplicitCase{"run_code", map[string]any{"code": "cat /tmp/sbk-implicit", "language": "bash"}})
}

func specRunCodeImplicitCreate(ctx context.Context, tc *TestContext) {
	tc.expectImplicitCreate(ctx, dpImplicitCase{"run_code", map[string]any{"code": "echo one", "language": "bash"}}, dpImplicitCase{"run_command", map[string]any{"command": "echo two"}})
}

func specRenewsOwned(ctx context.Context, tc *TestContext) {
	tc.expectRenewals(ctx, 120, []dpRenewalCase{
		{Tool: "run_command", WantEnvd: true, Args: func(id string) map[string]any {
			return map[string]any{"command": "echo renew", "sandbox_id": id}
		}},
		{Tool: "run_command", WantEnvd: true, Args: func(string) map[string]any {
			return map[string]any{"command": "exit 9"} // the default; a non-zero exit renews too
		}},
		{Tool: "run_code", WantEnvd: true, Args: func(id string) map[string]any {
			return map[string]any{"code": "echo renew", "language": "bash", "sandbox_id": id}
		}},
	})
}

func specRenewsImplicitDefault(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	s.runCommand(ctx, "true")
	created := tc.liveCreated()
	gomega.Expect(created).To(gomega.HaveLen(1))
	tc.Clock.Advance(11 * time.Second)
	mark := tc.Fake.Journal().Len()
	s.runCommand(ctx, "echo again")
	tc.expectRenewedSince("run_command", created[0], mark, dpDefaultRenewal, true)
}

func specExternalConnectNoRenew(ctx context.Context, tc *TestContext) {
	endAt := tc.Clock.Now().Add(40 * time.Minute)
	ext := tc.Seed(fakeprovider.SandboxSeed{EndAt: endAt})
	s := tc.Connect(ctx)
	mark := tc.Fake.Journal().Len()
	out := s.exec(ctx, "run_command", map[string]any{"command": "echo external > /tmp/sbk-ext; cat /tmp/sbk-ext", "sandbox_id": ext})
	gomega.Expect(out.Stdout).To(gomega.Equal("external\n"))
	gomega.Expect(tc.journalFor(ext)).To(gomega.ContainElement(gomega.HaveField("Envd", true)),
		"the command must run in the external sandbox")
	tc.expectExternalUntouchedSince("run_command", ext, mark, true)
	mark = tc.Fake.Journal().Len()
	code := s.exec(ctx, "run_code", map[string]any{"code": "cat /tmp/sbk-ext", "language": "bash", "sandbox_id": ext})
	gomega.Expect(code.Stdout).To(gomega.Equal("external\n"), "run_code must run in the same external sandbox")
	tc.expectExternalUntouchedSince("run_code", ext, mark, true)
	gomega.Expect(tc.liveCreated()).To(gomega.BeEmpty(), "naming an external sandbox creates nothing")
	gomega.Expect(s.Close(ctx)).To(gomega.Succeed())
	time.Sleep(100 * time.Millisecond) // let a wrongful close-time destroy happen
	_, alive := tc.Fake.Sandbox(ext)
	gomega.Expect(alive).To(gomega.BeTrue(), "closing the session must not destroy an external sandbox")
	for _, e := range tc.journal()[mark:] {
		gomega.Expect(e.Op == sandbox.OpKillSandbox && fakeprovider.SameSandbox(e.SandboxID, ext)).To(gomega.BeFalse(), "the external sandbox was killed at close")
	}
}

// execSeq is the output of `seq 1 n`.
func execSeq(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\n')
	}
	return b.String()
}

// execExpectHeadTail checks that got is full cut in the middle: within the
// cap plus a marker, starting with a head of full and ending with a tail of
// full, with only a short marker between them, and keeping a fair share of
// each end.
func execExpectHeadTail(stream, got, full string) {
	ginkgo.GinkgoHelper()
	gomega.Expect(len(got)).To(gomega.BeNumerically("<=", execCap+execMarkerSlack), "%s: %d bytes exceed the 64 KiB cap", stream, len(got))
	gomega.Expect(len(got)).To(gomega.BeNumerically(">=", execCap/2), "%s: a cut stream keeps close to the cap", stream)
	head := 0
	for head < len(got) && head < len(full) && got[head] == full[head] {
		head++
	}
	tail := 0
	for tail < len(got)-head && tail < len(full) && got[len(got)-1-tail] == full[len(full)-1-tail] {
		tail++
	}
	gomega.Expect(strings.HasPrefix(got, "1\n2\n3\n")).To(gomega.BeTrue(), "%s: the head (first lines) must be kept: %q...", stream, truncate(got, 40))
	gomega.Expect(strings.HasSuffix(got, "\n99999\n100000\n")).To(gomega.BeTrue(), "%s: the tail (last lines) must be kept", stream)
	gomega.Expect(head).To(gomega.BeNumerically(">=", execCap/8), "%s: too little of the head kept (%d bytes)", stream, head)
	gomega.Expect(tail).To(gomega.BeNumerically(">=", execCap/8), "%s: too little of the tail kept (%d bytes)", stream, tail)
	gomega.Expect(len(got)-head-tail).To(gomega.BeNumerically("<=", execMarkerSlack),
		"%s: between the kept head (%d bytes) and tail (%d bytes) only a short marker may stand, not %d bytes", stream, head, tail, len(got)-head-tail)
}

// execExpectMissingInterpreterOr accepts what run_code may answer for a
// language whose interpreter the template may lack: the program's output
// (exit_code 0, stdout want), exit_code 127 (interpreter not found) as a
// result, or a categorized tool error. It records which one it saw.
func execExpectMissingInterpreterOr(tc *TestContext, r *Result, want, what string) {
	ginkgo.GinkgoHelper()
	gomega.Expect(r.Err).NotTo(gomega.HaveOccurred(), "%s: protocol error", what)
	if r.IsError {
		e := tc.ExpectToolError(r, "")
		ginkgo.AddReportEntry(what, fmt.Sprintf("tool error, category %v", e["category"]))
		return
	}
	var out execResult
	tc.decode(r, &out, "stdout", "stderr", "exit_code", "truncated")
	ginkgo.AddReportEntry(what, fmt.Sprintf("result with exit_code %d", out.ExitCode))
	if out.ExitCode == 0 {
		gomega.Expect(out.Stdout).To(gomega.Equal(want), "%s: the program's output (wrong interpreter?)", what)
		return
	}
	gomega.Expect(out.ExitCode).To(gomega.Equal(127),
		"%s: without the interpreter the program cannot run: exit_code 127 (not found), not another status (stderr %q)", what, truncate(out.Stderr, 200))
	gomega.Expect(out.Stdout).To(gomega.BeEmpty(), "%s: nothing ran, so no output", what)
}

// execExpectDefines fails the spec at once, saying so, when the tool's
// advertised input schema lacks arguments the rule gives it (instead of
// waiting out a timeout it never received, or failing on its effects).
func execExpectDefines(tc *TestContext, tool, rule string, args ...string) {
	ginkgo.GinkgoHelper()
	props, ok := advertisedProps(tc, tool)
	if !ok {
		return
	}
	var missing []string
	for _, a := range args {
		if _, has := props[a]; !has {
			missing = append(missing, a)
		}
	}
	if len(missing) > 0 {
		ginkgo.Fail(fmt.Sprintf("%s defines no %s argument, which %s gives it", tool, strings.Join(missing, ", "), rule))
	}
}

// dpDefaultRenewal is the renewal policy of a sandbox created without a
// timeout (RENEW-1).
const dpDefaultRenewal = 300

// execResult is the result of run_command and run_code (EXEC-1, EXEC-2).
type execResult struct {
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	ExitCode  int    `json:"exit_code"`
	Truncated bool   `json:"truncated"`
}

// decode asserts a successful result (TOOLS-3), checks that its
// structuredContent holds every key of the contract's result, and decodes it
// into out.
func (tc *TestContext) decode(r *Result, out any, keys ...string) {
	ginkgo.GinkgoHelper()
	tc.ExpectSuccess(r)
	for _, k := range keys {
		gomega.Expect(r.Structured).To(gomega.HaveKey(k), "%s: the result lacks %q", r.Tool, k)
	}
	data, err := json.Marshal(r.Structured)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	gomega.Expect(json.Unmarshal(data, out)).To(gomega.Succeed(), "%s: result members have the wrong types: %s", r.Tool, truncate(r.Text, 300))
}

// exec calls run_command or run_code and returns its decoded result.
func (s *Session) exec(ctx context.Context, tool string, args map[string]any) execResult {
	ginkgo.GinkgoHelper()
	tc := s.tc
	var out execResult
	tc.decode(s.Call(ctx, tool, args), &out, "stdout", "stderr", "exit_code", "truncated")
	return out
}

// runCommand runs a shell command that must succeed with exit code 0.
func (s *Session) runCommand(ctx context.Context, command string, sandboxID ...string) execResult {
	ginkgo.GinkgoHelper()
	args := map[string]any{"command": command}
	if len(sandboxID) > 0 && sandboxID[0] != "" {
		args["sandbox_id"] = sandboxID[0]
	}
	out := s.exec(ctx, "run_command", args)
	gomega.Expect(out.ExitCode).To(gomega.Equal(0), "run_command %q: exit code (stderr %q)", command, truncate(out.Stderr, 300))
	return out
}

// scratchDir returns a fresh absolute directory path under /tmp (which
// every E2B template and the fake have) for one spec's files.
func scratchDir(tag string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "/tmp/sbk-" + tag + "-" + hex.EncodeToString(b)
}

// createWithTimeout creates a sandbox with create_sandbox and returns its ID; a
// timeout of 0 leaves the argument out.
func (s *Session) createWithTimeout(ctx context.Context, timeout int) string {
	ginkgo.GinkgoHelper()
	args := map[string]any{}
	if timeout > 0 {
		args["timeout"] = timeout
	}
	return s.mustCreate(ctx, args)
}

// liveCreated returns the IDs of the live sandboxes the server created
// (the ones the spec did not seed).
func (tc *TestContext) liveCreated() []string {
	var ids []string
	for _, rec := range tc.Fake.LiveSandboxes() {
		if rec.Metadata[seedMarker] != "1" {
			ids = append(ids, rec.ID)
		}
	}
	return ids
}

// dpRenewalCase is one data-plane call whose renewal a spec checks.
type dpRenewalCase struct {
	// Tool is the contract tool called.
	Tool string
	// Args builds the call's arguments for the sandbox (sandbox_id already
	// set when the case needs it).
	Args func(sandboxID string) map[string]any
	// WantEnvd is true when the call must reach the sandbox's daemon (so the
	// renewal must follow that request).
	WantEnvd bool
}

// expectRenewals checks RENEW-1 for each case, in order, on an owned
// sandbox created with create_sandbox {timeout: policy}: the call succeeds,
// the journal holds a set-timeout request for the sandbox with {"timeout":
// policy} after the call's last daemon request, already when the call has
// returned, and the sandbox's end is now + policy on the fake's clock.
func (tc *TestContext) expectRenewals(ctx context.Context, policy int, cases []dpRenewalCase) {
	ginkgo.GinkgoHelper()
	s := tc.Connect(ctx)
	id := s.createWithTimeout(ctx, policy)
	for _, c := range cases {
		// Move the clock so that a renewal is visible in endAt.
		tc.Clock.Advance(7 * time.Second)
		mark := tc.Fake.Journal().Len()
		r := s.Call(ctx, c.Tool, c.Args(id))
		tc.ExpectSuccess(r)
		tc.expectRenewedSince(c.Tool, id, mark, policy, c.WantEnvd)
	}
}

// expectRenewedSince checks that since journal index mark the sandbox was
// renewed to policy seconds (after the last daemon request when wantEnvd),
// and that its end is now + policy.
func (tc *TestContext) expectRenewedSince(tool, id string, mark, policy int, wantEnvd bool) {
	ginkgo.GinkgoHelper()
	entries := tc.journal()[mark:]
	lastEnvd, renewal := -1, -1
	for i, e := range entries {
		if !fakeprovider.SameSandbox(e.SandboxID, id) {
			continue
		}
		if e.Envd {
			lastEnvd = i
		}
		if e.Op == sandbox.OpSetTimeout && i > lastEnvd {
			renewal = i
		}
	}
	if wantEnvd {
		gomega.Expect(lastEnvd).To(gomega.BeNumerically(">=", 0), "%s: the call never reached the sandbox's daemon", tool)
	}
	gomega.Expect(renewal).To(gomega.BeNumerically(">=", 0),
		"%s: no set-timeout request for the owned sandbox after the call's work, before the call returned (RENEW-1); journal: %s",
		tool, entries.Summary())
	e := entries[renewal]
	var body struct {
		Timeout *int `json:"timeout"`
	}
	gomega.Expect(json.Unmarshal(e.Body, &body)).To(gomega.Succeed(), "%s: set-timeout body is not JSON", tool)
	gomega.Expect(body.Timeout).NotTo(gomega.BeNil(), "%s: set-timeout body has no timeout", tool)
	gomega.Expect(*body.Timeout).To(gomega.Equal(policy), "%s: renewed to the wrong timeout (the session's renewal policy is %d s)", tool, policy)
	gomega.Expect(e.Status).To(gomega.BeNumerically("<", 300), "%s: the renewal failed with status %d", tool, e.Status)
	rec, ok := tc.Fake.Sandbox(id)
	gomega.Expect(ok).To(gomega.BeTrue(), "%s: the owned sandbox is gone", tool)
	gomega.Expect(rec.EndAt).To(gomega.BeTemporally("==", tc.Clock.Now().Add(time.Duration(policy)*time.Second)),
		"%s: the sandbox's end is not now + the renewal policy", tool)
}

// expectExternalUntouchedSince checks RENEW-2 on the journal since mark for an
// external sandbox: it was reached through connect (once at least, when
// wantConnect), and never renewed, killed or created.
func (tc *TestContext) expectExternalUntouchedSince(tool, id string, mark int, wantConnect bool) {
	ginkgo.GinkgoHelper()
	entries := tc.journal()[mark:]
	connects := 0
	for _, e := range entries {
		switch e.Op {
		case sandbox.OpConnectSandbox, sandbox.OpGetSandbox:
			if fakeprovider.SameSandbox(e.SandboxID, id) { // GET: the 1.x connect (reachCalls)
				connects++
			}
		case sandbox.OpSetTimeout, sandbox.OpKillSandbox:
			gomega.Expect(fakeprovider.SameSandbox(e.SandboxID, id)).To(gomega.BeFalse(), "%s: the server called %s on an external sandbox (RENEW-2)", tool, e.Op)
		case sandbox.OpCreateSandbox:
			ginkgo.Fail(fmt.Sprintf("%s: the server created a sandbox for a call naming an external sandbox", tool))
		}
	}
	if wantConnect {
		gomega.Expect(connects).To(gomega.BeNumerically(">=", 1), "%s: the external sandbox was not reached through the platform's connect call (or the 1.x GET /sandboxes/{id}) (RENEW-2); journal: %s",
			tool, entries.Summary())
	}
}

// Summary lists journal entries briefly for failure messages.
func (entries journal) Summary() string {
	var parts []string
	for _, e := range entries {
		op := e.Op
		if op == "" {
			op = e.Method + " " + e.Path
		}
		parts = append(parts, fmt.Sprintf("%s[%s]=%d", op, e.SandboxID, e.Status))
	}
	return truncate(strings.Join(parts, ", "), 2000)
}

// dpImplicitCase is one data-plane call made in a session without a
// default sandbox.
type dpImplicitCase struct {
	Tool string
	Args map[string]any
}

// expectImplicitCreate checks SESSION-2 for a tool: in a fresh session
// the call creates exactly one sandbox, a second call reuses it, it is the
// session's default (get_sandbox without sandbox_id names it), and it is
// owned (destroyed when the session closes). It returns nothing: every
// check is an assertion.
func (tc *TestContext) expectImplicitCreate(ctx context.Context, first, second dpImplicitCase) {
	ginkgo.GinkgoHelper()
	s := tc.Connect(ctx)
	gomega.Expect(tc.liveCreated()).To(gomega.BeEmpty())
	r := s.Call(ctx, first.Tool, first.Args)
	tc.ExpectSuccess(r)
	gomega.Expect(tc.Fake.Journal().Count(sandbox.OpCreateSandbox)).To(gomega.Equal(1),
		"%s without sandbox_id and without a default must create exactly one sandbox (SESSION-2)", first.Tool)
	created := tc.liveCreated()
	gomega.Expect(created).To(gomega.HaveLen(1), "%s: one live sandbox after the implicit create", first.Tool)
	for _, e := range tc.Fake.Journal().Calls(sandbox.OpCreateSandbox) {
		var body struct {
			TemplateID string `json:"templateID"`
		}
		_ = json.Unmarshal(e.Body, &body)
		gomega.Expect(body.TemplateID).To(gomega.Or(gomega.BeEmpty(), gomega.Equal(sandbox.DefaultTemplate)),
			"%s: the implicit create must use the default template", first.Tool)
	}
	if id := r.String("sandbox_id"); id != "" {
		gomega.Expect(id).To(gomega.Equal(created[0]), "%s: the sandbox_id in the result is not the created sandbox", first.Tool)
	}
	tc.ExpectSuccess(s.Call(ctx, second.Tool, second.Args))
	gomega.Expect(tc.Fake.Journal().Count(sandbox.OpCreateSandbox)).To(gomega.Equal(1),
		"%s after %s: the second call must use the implicitly created default, not create another", second.Tool, first.Tool)
	g := tc.ExpectSuccess(s.Call(ctx, "get_sandbox", map[string]any{}))
	gomega.Expect(g.String("sandbox_id")).To(gomega.Equal(created[0]), "the implicitly created sandbox must become the default")
	gomega.Expect(s.Close(ctx)).To(gomega.Succeed())
	gone := tc.WaitFor(ctx, tc.Config.SettleTimeout, func() bool {
		_, ok := tc.Fake.Sandbox(created[0])
		return !ok
	})
	gomega.Expect(gone).To(gomega.BeTrue(), "the implicitly created sandbox is owned: closing the session must destroy it")
}

// reachCalls are the control-plane calls an SDK makes to reach an existing
// sandbox: connect (2.x: POST /sandboxes/{id}/connect) and GET
// /sandboxes/{id}, which is how e2b 1.x connects (JS e2b@1.13.2
// dist/index.mjs Sandbox.connect calls getInfo, GET /sandboxes/{sandboxID},
// and takes envdAccessToken from it; Python 1.x Sandbox.connect calls
// SandboxApi._cls_get_info the same way).
var reachCalls = []string{sandbox.OpConnectSandbox, sandbox.OpGetSandbox}

// The specs every data-plane family has, one constructor each: their rules
// and titles are the same but for the tools they name.

// implicitCreateSpec is a family's SESSION-2 spec: tool, called without
// sandbox_id and without a default, creates one sandbox that becomes the
// owned default. tools are every tool the spec calls.
func implicitCreateSpec(id, tool string, tools []string, body func(context.Context, *TestContext)) Spec {
	return Spec{ID: id, Rules: []string{"SESSION-2"}, Tools: tools, NeedsFake: true, Body: body,
		Title: tool + " without sandbox_id and without a default creates one sandbox that becomes the owned default"}
}

// renewsOwnedSpec is a family's RENEW-1 spec: each of tools, on an owned
// sandbox (made with create_sandbox), renews it to the session's renewal
// policy before returning.
func renewsOwnedSpec(id string, tools []string, body func(context.Context, *TestContext)) Spec {
	return Spec{ID: id, Rules: []string{"RENEW-1"}, Tools: append([]string{"create_sandbox"}, tools...), NeedsFake: true, Body: body,
		Title: andList(tools) + " on an owned sandbox renew it to the session's renewal policy before returning"}
}

// externalNoRenewSpec is a family's RENEW-2 spec: tools on an external
// sandbox reach it through connect and never renew it.
func externalNoRenewSpec(id string, tools []string, body func(context.Context, *TestContext)) Spec {
	return Spec{ID: id, Rules: []string{"RENEW-2"}, Tools: tools, NeedsFake: true, Body: body,
		Title: andList(tools) + " on an external sandbox reach it through connect and never renew it"}
}

// andList joins words as a list in prose: "a", "a and b", "a, b and c".
func andList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}
