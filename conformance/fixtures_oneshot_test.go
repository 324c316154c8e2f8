package conformance

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// oneShotDefects are the specs the fixed one-tool run_code fork fails
// under --profile one-shot, each for a defect it has:
//   - ERR-2: a failed create comes back as plain text ("could not create a
//     sandbox"), not {"error": {...}} (the errors matrix, on run_code's own
//     create);
//   - EXEC-2: run_code has no language (run-code-bash, -javascript);
//   - VAL-6: undefined arguments are refused by the SDK's schema check in
//     plain text, naming no field (bounds.run-code, leakage.validation-no-echo);
//   - TOOLS-3: its results are plain text, not structuredContent.
//
// The fork's SDK serves 2026-07-28 requests too (TOOLS-4 allows it), and
// the same defects show there: oneShotTrueDefects names each in both eras.
var oneShotDefects = []string{
	"bounds.run-code",
	"errors.malformed", "errors.reset", "errors.status-400", "errors.status-401", "errors.status-403",
	"errors.status-404", "errors.status-409", "errors.status-429", "errors.status-500", "errors.status-502",
	"errors.status-503", "errors.status-504",
	"exec.run-code-bash", "exec.run-code-default-python", "exec.run-code-javascript",
	"leakage.validation-no-echo",
}

// oneShotTrueDefects is oneShotDefects in both eras, in report order.
var oneShotTrueDefects = func() []string {
	var ids []string
	for _, id := range oneShotDefects {
		ids = append(ids, id, runID(id, EraModern))
	}
	return ids
}()

// TestKitOneShotProfile runs the kit with --profile one-shot against the
// fixed fork of the one-tool run_code fixture: what needs other tools or a
// session default is not applicable, with the reason; nothing fails that is
// not one of the fork's defects; no spec asks it for a sandbox_id it does
// not have; and the fault matrix reaches run_code's own create.
func TestKitOneShotProfile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the kit")
	}
	bins := buildFixtures(t, "./internal/fixtures/leakyruncode")
	cmd := exec.Command(bins["sandboxkit"], "conform", "--server-cmd", bins["leakyruncode"]+" -fixed", "--profile", "one-shot")
	cmd.Env = os.Environ()
	data, err := cmd.CombinedOutput()
	out := string(data)
	if err == nil {
		t.Fatalf("the fork has real defects, but the run passed\n%s", tail(data))
	}
	sum := summaryOf(out)
	t.Logf("kit output for the fixed fork under one-shot: %d lines; summary:\n%s", strings.Count(out, "\n"), sum)
	if got := failedSpecs(sum); !slices.Equal(got, oneShotTrueDefects) {
		t.Errorf("failed specs %v\nwant exactly the fork's defects %v", got, oneShotTrueDefects)
	}
	for _, na := range []string{
		"N/A protocol.tools-list-shape: not applicable under profile one-shot: TOOLS-1 lists the contract's 15 tools",
		"N/A default.concurrent-implicit-create, ",
		"not applicable under profile one-shot: it needs tools besides run_code (create_sandbox)",
	} {
		if !strings.Contains(sum, na) {
			t.Errorf("the summary does not say %q", na)
		}
	}
	if strings.Contains(sum, "sandbox_id") {
		t.Errorf("a spec asked the one-shot server for a sandbox_id:\n%s", sum)
	}
	if !strings.Contains(sum, `run_code(one-shot) status-`) && !strings.Contains(sum, `run_code(one-shot) malformed`) {
		t.Errorf("the fault matrix did not fault run_code's own create:\n%s", sum)
	}
	if strings.Contains(sum, leakPrefix) {
		t.Errorf("the fork kills what it creates, but the kit reports a leak:\n%s", sum)
	}
}
