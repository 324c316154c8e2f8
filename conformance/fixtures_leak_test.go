package conformance

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// buildFixtures builds the sandboxkit command and the kit's fixture
// servers (conformance/internal/fixtures) into a temporary directory.
func buildFixtures(t *testing.T, pkgs ...string) map[string]string {
	t.Helper()
	return buildCommands(t, append([]string{"../cmd/sandboxkit"}, pkgs...)...)
}

// buildFixture builds one fixture server alone, for a test that runs the
// kit in a child of its own test binary and so needs no sandboxkit command.
func buildFixture(t *testing.T, pkg string) string {
	t.Helper()
	return buildCommands(t, pkg)[filepath.Base(pkg)]
}

// buildCommands builds the main packages pkgs with one go build (which
// builds them in parallel) into a temporary directory, and returns each
// binary's path by its package's base name.
func buildCommands(t *testing.T, pkgs ...string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", append([]string{"build", "-o", dir + string(filepath.Separator)}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("build %s: %v\n%s", strings.Join(pkgs, " "), err, out)
	}
	bins := map[string]string{}
	for _, pkg := range pkgs {
		bins[filepath.Base(pkg)] = filepath.Join(dir, filepath.Base(pkg))
	}
	return bins
}

// conformOutput runs sandboxkit conform against a server command and
// returns its output; the run must fail (every fixture has a defect).
func conformOutput(t *testing.T, sbk string, serverCmd ...string) string {
	t.Helper()
	cmd := exec.Command(sbk, "conform", "--server-cmd", strings.Join(serverCmd, " "))
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the kit passed a fixture with a defect:\n%s", out)
	}
	return string(out)
}

// summaryOf is the output from the kit's summary on.
func summaryOf(out string) string {
	if i := strings.Index(out, "\nsandboxkit conformance summary"); i >= 0 {
		return out[i:]
	}
	return ""
}

// failedSpecs reads the IDs of the failed specs from a summary: single
// failures ("FAIL <id> ..."), grouped ones ("N specs: a, b") and the leak
// check's detail lines ("<id>: the spec's sessions ...").
func failedSpecs(summary string) []string {
	var ids []string
	for _, m := range regexp.MustCompile(`(?m)^\s+FAIL ([a-z]+\.[a-z0-9-]+(?:@[0-9-]+)?)`).FindAllStringSubmatch(summary, -1) {
		ids = append(ids, m[1])
	}
	for _, m := range regexp.MustCompile(`(?m)^\s+\d+ specs?: (.+)$`).FindAllStringSubmatch(summary, -1) {
		ids = append(ids, strings.Split(m[1], ", ")...)
	}
	for _, m := range regexp.MustCompile(`(?m)^\s+([a-z]+\.[a-z0-9-]+): the spec's sessions`).FindAllStringSubmatch(summary, -1) {
		ids = append(ids, m[1])
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// TestKitFindsLeakingRunCode runs the kit against the leaking one-tool
// run_code fixture and against its fixed fork: the leak is reported once,
// as SESSION-1, with the sandbox's ID and the call that created it; the
// fork gets no leak failure, and every other failure is the same for both
// (the leak check adds nothing else).
func TestKitFindsLeakingRunCode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the kit twice")
	}
	bins := buildFixtures(t, "./internal/fixtures/leakyruncode")
	sbk, fixture := bins["sandboxkit"], bins["leakyruncode"]

	leaky := conformOutput(t, sbk, fixture)
	sum := summaryOf(leaky)
	if sum == "" {
		t.Fatalf("no summary:\n%s", leaky)
	}
	t.Logf("kit output for the leaking fixture: %d lines; summary:\n%s", strings.Count(leaky, "\n"), sum)
	if n := strings.Count(sum, "FAIL [SESSION-1] "+causeLeak); n != 1 {
		t.Errorf("the leak group appears %d times in the summary, want once:\n%s", n, sum)
	}
	detail := regexp.MustCompile(`(?m)^\s+exec\.run-code-default-python: the spec's sessions created 1 sandbox; 0 destroyed, 1 still running .* after every session closed: ([0-9a-z]{12,}) \(appeared during run_code, call 1 of session 1\)`)
	if !detail.MatchString(sum) {
		t.Errorf("no leak line for exec.run-code-default-python with the sandbox's ID and its creating call:\n%s", sum)
	}
	if strings.Contains(sum, "the fake saw no request") {
		t.Errorf("the fixture reaches the fake, but the kit says it did not:\n%s", sum)
	}
	if !strings.HasPrefix(leaky, "sandboxkit conformance "+Version+": leaky-run-code") ||
		!strings.Contains(leaky, "  found    1: run_code\n") || strings.Count(leaky, "  missing  14: ") != 1 {
		t.Errorf("the run does not open with one banner of the tools found and missing:\n%s", truncate(leaky, 800))
	}
	if !strings.Contains(sum, "SKIP the server does not advertise create_sandbox: ") {
		t.Errorf("skip reasons are not spelled out in the summary:\n%s", sum)
	}
	if !regexp.MustCompile(`server processes: \d+ sessions closed by the kit: \d+ exited on EOF\n`).MatchString(sum) {
		t.Errorf("the summary does not say how the server processes ended:\n%s", sum)
	}

	fixed := conformOutput(t, sbk, fixture, "-fixed")
	fixedSum := summaryOf(fixed)
	t.Logf("kit output for the fixed fork: %d lines", strings.Count(fixed, "\n"))
	if strings.Contains(fixedSum, leakPrefix) {
		t.Errorf("the fixed fork kills every sandbox it creates, but the kit reports a leak:\n%s", fixedSum)
	}
	leakyFailed, fixedFailed := failedSpecs(sum), failedSpecs(fixedSum)
	// The specs the leak check failed (a detail line each) may fail for the
	// leak alone: every spec whose run_code calls succeed leaks.
	leaked := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+([a-z]+\.[a-z0-9-]+): the spec's sessions`).FindAllStringSubmatch(sum, -1) {
		leaked[m[1]] = true
	}
	withoutLeak := slices.DeleteFunc(slices.Clone(leakyFailed), func(id string) bool {
		return leaked[id] && !slices.Contains(fixedFailed, id)
	})
	if !slices.Equal(withoutLeak, fixedFailed) {
		t.Errorf("the leak check changed more than the leak: leaking fixture failed %v, fixed fork %v", leakyFailed, fixedFailed)
	}
}

// TestKitSaysProviderNotReached runs the kit against the run_code fixture
// with an SDK that reads no E2B_API_URL: the summary says once that the
// fake saw no request, with the likely cause, for the specs it affected.
func TestKitSaysProviderNotReached(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the kit")
	}
	bins := buildFixtures(t, "./internal/fixtures/leakyruncode")
	out := conformOutput(t, bins["sandboxkit"], bins["leakyruncode"], "-unreached")
	sum := summaryOf(out)
	t.Logf("kit output for the unreached fixture: %d lines; summary:\n%s", strings.Count(out, "\n"), sum)
	// The summary cuts a long cause; its first sentence names it.
	notReached, _, _ := strings.Cut(causeNotReached, ": ")
	if n := strings.Count(sum, "INCONCLUSIVE (not testable) "+notReached); n != 1 {
		t.Errorf("the summary states the unreached provider %d times, want once as an inconclusive group:\n%s", n, sum)
	}
	if strings.Contains(sum, "FAIL "+notReached) {
		t.Errorf("the unreached provider is counted as a failure:\n%s", sum)
	}
	if !strings.Contains(sum, "exec.run-code-default-python") {
		t.Errorf("exec.run-code-default-python is not among the specs the unreached provider affected:\n%s", sum)
	}
	if strings.Contains(sum, leakPrefix) {
		t.Errorf("nothing was created, but the kit reports a leak:\n%s", sum)
	}
}

// TestKitQuotesStdoutLog runs the kit against the fixture that logs to
// stdout: the run error quotes the line and says what to do, and no rule
// is blamed for it.
func TestKitQuotesStdoutLog(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the kit")
	}
	bins := buildFixtures(t, "./internal/fixtures/stdoutlogger")
	out := conformOutput(t, bins["sandboxkit"], bins["stdoutlogger"])
	sum := summaryOf(out)
	t.Logf("kit output for the stdout-logging fixture: %d lines; summary:\n%s", strings.Count(out, "\n"), sum)
	want := "RUN ERROR conformance: start stdio server: the server wrote a non-JSON line to stdout: `info: Starting sandbox MCP server on stdio`. "
	if strings.Count(sum, want) != 1 || !strings.Contains(sum, "write logs to stderr") {
		t.Errorf("the summary does not quote the stdout line once as a run error:\n%s", sum)
	}
	if ids := failedSpecs(sum); len(ids) != 0 {
		t.Errorf("the run error is blamed on specs %v", ids)
	}

	// A line written during a call: every spec it broke is listed once,
	// under the quoted line.
	out = conformOutput(t, bins["sandboxkit"], bins["stdoutlogger"], "-on-call")
	sum = summaryOf(out)
	t.Logf("kit output for the fixture logging on each call: %d lines; summary:\n%s", strings.Count(out, "\n"), sum)
	group := regexp.MustCompile("(?m)^  FAIL the server wrote a non-JSON line to stdout: `info: listing sandboxes`\\. .*\n\\s+(\\d+) specs?: .*delegation\\.list-delegates")
	if strings.Count(sum, "non-JSON line") != 1 || !group.MatchString(sum) {
		t.Errorf("the summary does not group the specs the stdout line broke under it, once:\n%s", sum)
	}
}

// TestStdoutSniffer checks which stdout lines count as non-JSON.
func TestStdoutSniffer(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"{\"jsonrpc\":\"2.0\"}\n[1]\n  {\"a\":1}\n", ""},
		{"{\"jsonrpc\":\"2.0\"}\ninfo: Starting…\n{}\n", "info: Starting…"},
		{"\n\nlog without newline", "log without newline"},
		{strings.Repeat("x", 500) + "\n", strings.Repeat("x", maxQuoted)},
	} {
		s := newStdoutSniffer()
		s.r = strings.NewReader(c.in)
		buf := make([]byte, 7)
		for {
			if _, err := s.Read(buf); err != nil {
				break
			}
		}
		if got := s.nonJSON(); got != c.want {
			t.Errorf("%q: non-JSON line %q, want %q", c.in, got, c.want)
		}
	}
}

// TestStdioTransportEndings checks how the stdio transport names the end
// of a server process: one that exits when its stdin ends, one that needs
// SIGTERM, one that ignores it and is killed.
func TestStdioTransportEndings(t *testing.T) {
	for _, c := range []struct {
		script, want string
	}{
		{"cat >/dev/null", endedOnEOF},
		{"exec sleep 3", endedOnSIGTERM},
		{"trap '' TERM; sleep 3; exit 0", endedKilled},
	} {
		tr := &stdioTransport{cmd: exec.Command("sh", "-c", c.script), terminate: 300 * time.Millisecond, sniff: newStdoutSniffer()}
		conn, err := tr.Connect(t.Context())
		if err != nil {
			t.Fatalf("%s: %v", c.script, err)
		}
		_ = conn.Close()
		if got := tr.ended(); got != c.want {
			t.Errorf("%q: ended %q, want %q", c.script, got, c.want)
		}
	}
}
