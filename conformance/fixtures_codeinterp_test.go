package conformance

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// codeInterpLeaks are the specs the unfixed code-interpreter fixture
// fails, each for its one planted defect: a failed create comes back as the
// platform's raw answer, message, request URL and canary included (ERR-3,
// caught by leakage.faults), and not in the contract's error shape (ERR-2,
// the errors matrix on run_code's own create).
var codeInterpLeaks = func() []string {
	var ids []string
	for _, id := range []string{
		"errors.malformed", "errors.reset", "errors.status-400", "errors.status-401", "errors.status-403",
		"errors.status-404", "errors.status-409", "errors.status-429", "errors.status-500", "errors.status-502",
		"errors.status-503", "errors.status-504", "leakage.faults",
	} {
		ids = append(ids, id, runID(id, EraModern))
	}
	slices.Sort(ids)
	return ids
}()

// TestKitOnCodeInterpreterFixture runs the kit with --profile one-shot
// against the code-interpreter-shaped fixture (one run_code, results
// through the fake's /execute on port 49999) and its fixed fork: the fork
// passes with no failure, its run_code specs executed; the unfixed one
// fails exactly the specs of its planted defect, with the leaked canary
// named.
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
	if got := failedSpecs(sum); !slices.Equal(got, codeInterpLeaks) {
		t.Errorf("failed specs %v\nwant exactly those of the planted leak %v", got, codeInterpLeaks)
	}
	if !strings.Contains(sum, `holds the secret "canary-err-`) {
		t.Errorf("the summary does not name the leaked canary:\n%s", sum)
	}
}
