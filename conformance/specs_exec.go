package conformance

import (
	"context"
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
		{
			ID: "exec.run-command-streams", Rules: []string{"EXEC-1"},
			Tools: []string{"run_command"},
			Title: "run_command returns stdout and stderr separately, with exit_code 0 and truncated false",
			Body:  specRunCommandStreams,
		},
		{
			ID: "exec.nonzero-exit-is-result", Rules: []string{"EXEC-1"},
			Tools: []string{"run_command"},
			Title: "run_command reports a non-zero exit status as a successful result with that exit_code, not as a tool error",
			Body:  specNonzeroExitIsResult,
		},
		{
			ID: "exec.cwd-and-envs", Rules: []string{"EXEC-1"},
			Tools: []string{"run_command"},
			Title: "run_command runs in the given cwd with the given envs added to the environment",
			Body:  specCwdAndEnvs,
		},
		{
			ID: "exec.timeout-is-tool-error", Rules: []string{"EXEC-1"},
			Tools: []string{"run_command"},
			Title: "run_command fails promptly with a tool error of category timeout when the command outlives timeout, and kills it",
			Body:  specTimeoutIsToolError,
		},
		{
			ID: "exec.run-code-bash", Rules: []string{"EXEC-2"},
			Tools: []string{"run_code"},
			Title: "run_code with language bash runs the program and returns the same shape as run_command",
			Body:  specRunCodeBash,
		},
		{
			ID: "exec.run-code-default-python", Rules: []string{"EXEC-2"},
			Tools: []string{"run_code"},
			Title: "run_code without language runs Python: the program's output, or exit_code 127 or a categorized tool error when the template has no Python",
			Body:  specRunCodeDefaultPython,
		},
		{
			ID: "exec.run-code-javascript", Rules: []string{"EXEC-2"},
			Tools: []string{"run_code"},
			Title: "run_code with language javascript runs the program with Node: its output, or exit_code 127 or a categorized tool error when the template has no Node",
			Body:  specRunCodeJavascript,
		},
		{
			ID: "exec.output-cap-head-tail", Rules: []string{"EXEC-3", "EXEC-2"},
			Tools: []string{"run_command", "run_code"},
			Title: "run_command and run_code cut a stream over 64 KiB in the middle, keeping its head and tail, and sets truncated",
			Body:  specOutputCapHeadTail,
		},
		implicitCreateSpec("exec.implicit-create", "run_command", []string{"run_command", "run_code", "get_sandbox"}, specImplicitCreate),
		implicitCreateSpec("exec.run-code-implicit-create", "run_code", []string{"run_command", "run_code", "get_sandbox"}, specRunCodeImplicitCreate),
		renewsOwnedSpec("exec.renews-owned", []string{"run_command", "run_code"}, specRenewsOwned),
		{
			ID: "exec.renews-implicit-default", Rules: []string{"RENEW-1"}, NeedsFake: true,
			Tools: []string{"run_command"},
			Title: "run_command renews an implicitly created sandbox to 300 s, the policy of a sandbox created without timeout",
			Body:  specRenewsImplicitDefault,
		},
		{
			ID: "exec.external-connect-no-renew", Rules: []string{"RENEW-2", "EXEC-1"}, NeedsFake: true,
			Tools: []string{"run_command", "run_code"},
			Title: "run_command and run_code on an external sandbox reach it through connect and never renew, own or destroy it",
			Body:  specExternalConnectNoRenew,
		},
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
