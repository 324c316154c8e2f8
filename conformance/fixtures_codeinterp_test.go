package conformance

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// codeInterpLeaks are the specs the unfixed code-interpreter fixture
// fails for its leak: a failed create or /execute comes back as the
// platform's raw answer, message, request URL and canary included (ERR-3,
// caught by leakage.faults), and not in the contract's error shape (ERR-2,
// the errors matrix on run_code's own create and on its /execute).
var codeInterpLeaks = bothEras(
	"errors.malformed", "errors.reset", "errors.status-400", "errors.status-401", "errors.status-403",
	"errors.status-404", "errors.status-409", "errors.status-429", "errors.status-500", "errors.status-502",
	"errors.status-503", "errors.status-504", "leakage.faults",
)

// codeInterpDroppedErrors are the specs the unfixed fixture fails for its
// second defect: it drops the stream's error line, so bash's exit 4 comes
// back as exit_code 0 (EXEC-2).
var codeInterpDroppedErrors = bothEras("exec.run-code-bash")

// bothEras returns each spec ID with its modern-era run, sorted.
func bothEras(ids ...string) []string {
	var out []string
	for _, id := range ids {
		out = append(out, id, runID(id, EraModern))
	}
	slices.Sort(out)
	return out
}

// TestKitOnCodeInterpreterFixture runs the kit with --profile one-shot
// against the code-interpreter-shaped fixture (one run_code, results
// through the fake's /execute on port 49999) and its fixed fork: the fork
// passes with no failure, its run_code specs executed; the unfixed one
// fails exactly the specs of its two planted defects, with the leaked
// canary named.
func TestKitOnCodeInterpreterFixture(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the kit twice")
	}
	bins := buildFixtures(t, "./internal/fixtures/codeinterp")
	sbk, fixture := bins["sandboxkit"], bins["codeinterp"]
	run := func(args ...string) (string, error) {
		cmd := exec.Command(sbk, "conform", "--server-cmd", strings.Join(args, " "), "--profile", "one-shot")
		cmd.Env = os.Environ()
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	fixed, err := run(fixture, "-fixed")
	sum := summaryOf(fixed)
	t.Logf("kit output for the fixed fork: %d lines; summary:\n%s", strings.Count(fixed, "\n"), sum)
	if err != nil || len(failedSpecs(sum)) != 0 {
		t.Errorf("the fixed fork got failures (%v): %v", err, failedSpecs(sum))
	}
	for _, spec := range []string{"exec.run-code-default-python", "exec.run-code-javascript", "exec.run-code-bash"} {
		if strings.Contains(sum, spec) {
			t.Errorf("%s is in the fixed fork's summary, so it did not pass:\n%s", spec, sum)
		}
	}
	if !strings.Contains(sum, " 0 failed") {
		t.Errorf("the fixed fork's summary does not count 0 failed:\n%s", sum)
	}

	leaky, err := run(fixture)
	sum = summaryOf(leaky)
	t.Logf("kit output for the unfixed fixture: %d lines; summary:\n%s", strings.Count(leaky, "\n"), sum)
	if err == nil {
		t.Fatalf("the kit passed the fixture that leaks the platform's errors")
	}
	want := slices.Sorted(slices.Values(append(slices.Clone(codeInterpLeaks), codeInterpDroppedErrors...)))
	if got := failedSpecs(sum); !slices.Equal(got, want) {
		t.Errorf("failed specs %v\nwant exactly those of the planted defects %v", got, want)
	}
	if !strings.Contains(sum, `holds the secret "canary-err-`) {
		t.Errorf("the summary does not name the leaked canary:\n%s", sum)
	}
}

// TestKitReachesE2B1DebugFixture runs the kit with --e2b1 debug against the
// code-interpreter fixture whose client is e2b 1.x in debug mode (no
// create, no kill, the code to http://localhost:49999 with no sandbox ID),
// fixed and unfixed. It binds the fixed ports 1.x calls (3000, 49983,
// 49999) and skips when one is taken. The kit must reach both: the banner
// names the path, the sandbox the fake started for debug mode is no leak,
// and the specs whose fault targets the create debug mode never makes are
// inconclusive (never exercised), not failed. The fixed fork gets no
// failure and its run_code specs pass on the fake's interpreter; the
// unfixed one fails exactly the specs of the defects that lie on the code's
// path to the interpreter: the dropped error line, and the raw answer of a
// faulted /execute (the faults on the create stay never exercised), which
// is how the kit tells the two apart through the 1.x path.
func TestKitReachesE2B1DebugFixture(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the kit twice")
	}
	bins := buildFixtures(t, "./internal/fixtures/codeinterp")
	run := func(args string) string {
		cmd := exec.Command(bins["sandboxkit"], "conform", "--server-cmd", bins["codeinterp"]+" "+args,
			"--profile", "one-shot", "--e2b1", "debug")
		cmd.Env = os.Environ()
		data, _ := cmd.CombinedOutput()
		out := string(data)
		if strings.Contains(out, "address already in use") {
			t.Skipf("a port e2b 1.x debug mode calls (3000, 49983, 49999) is taken on this machine:\n%s", truncate(out, 600))
		}
		sum := summaryOf(out)
		t.Logf("kit output for codeinterp %s: %d lines; summary:\n%s", args, strings.Count(out, "\n"), sum)
		if !strings.Contains(out, "e2b 1.x path: debug endpoints (E2B_DEBUG=true)") {
			t.Errorf("the banner does not say which e2b 1.x path the kit took:\n%s", truncate(out, 800))
		}
		if strings.Contains(sum, "the fake saw no request") || strings.Contains(sum, causeLeak) {
			t.Errorf("the kit did not reach the fixture, or blamed it for the fake's own debug sandbox:\n%s", sum)
		}
		return sum
	}

	sum := run("-fixed -e2b1-debug")
	if !strings.Contains(sum, "fault never exercised") {
		t.Errorf("the faults on the create debug mode never makes are not reported as never exercised:\n%s", sum)
	}
	if got := failedSpecs(sum); len(got) != 0 {
		t.Errorf("the fixed fork got failures through the 1.x path: %v", got)
	}
	for _, spec := range []string{"exec.run-code-default-python", "exec.run-code-javascript", "exec.run-code-bash"} {
		if strings.Contains(sum, spec) {
			t.Errorf("%s is in the fixed fork's summary, so it did not pass:\n%s", spec, sum)
		}
	}

	sum = run("-e2b1-debug")
	want := slices.Sorted(slices.Values(append(slices.Clone(codeInterpLeaks), codeInterpDroppedErrors...)))
	if got := failedSpecs(sum); !slices.Equal(got, want) {
		t.Errorf("the unfixed fork through the 1.x path failed %v\nwant exactly those of its dropped error line and its raw /execute errors %v", got, want)
	}
	if !strings.Contains(sum, "run_code(one-shot) execute") || !strings.Contains(sum, `holds the secret "canary-err-`) {
		t.Errorf("the summary does not name the leak on the faulted /execute:\n%s", sum)
	}
	if !strings.Contains(sum, "a non-zero exit of the program is a result") {
		t.Errorf("the summary does not say what the dropped error line broke:\n%s", sum)
	}
}
