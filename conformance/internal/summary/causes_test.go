package summary

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

// testCatalog is a catalog as the kit's: its families and tools, and
// some of its rules.
func testCatalog() Catalog {
	return Catalog{
		Families: []string{"protocol", "bounds", "errors", "cleanup", "exec"},
		Tools: []string{"create_sandbox", "kill_sandbox", "run_code", "run_command", "read_file", "write_file", "list_files",
			"list_sandboxes", "get_sandbox", "set_sandbox_timeout", "start_background_command", "get_background_command",
			"kill_background_command", "upload_file", "download_file"},
		Rules: []string{"LIST-1", "LIST-2", "LIST-3", "GET-1", "GET-2", "VAL-1", "VAL-2", "ERR-1", "EXEC-2", "SESSION-1"},
	}
}

// failedSpec is a failed spec's report with the kit's labels.
func failedSpec(id, rule, msg string) types.SpecReport {
	fam, _, _ := strings.Cut(id, ".")
	return types.SpecReport{
		LeafNodeType:   types.NodeTypeIt,
		LeafNodeText:   id,
		LeafNodeLabels: []string{fam, id, rule},
		State:          types.SpecStateFailed,
		Failure:        types.Failure{Message: msg},
	}
}

// One tool's refused arguments are one finding, whichever of them each
// spec's calls sent: it lists every refused argument (not the kit's
// "zq_" bait) and every spec it hit, once.
func TestKitSaysOneFindingPerRefusingTool(t *testing.T) {
	const refused = `run_code: unexpected tool error: validating "arguments": validating root: unexpected additional properties [%s]`
	r := ginkgo.Report{SpecReports: []types.SpecReport{
		failedSpec("errors.status-400", "ERR-1", strings.ReplaceAll(refused, "%s", `"language" "sandbox_id"`)),
		failedSpec("exec.run-code-bash", "EXEC-2", strings.ReplaceAll(refused, "%s", `"language"`)),
		failedSpec("bounds.run-code", "VAL-1", strings.ReplaceAll(refused, "%s", `"sandbox_id" "zq_extra"`)),
		failedSpec("bounds.other", "VAL-2", strings.ReplaceAll(refused, "%s", `"zq_extra"`)),
	}}
	var b bytes.Buffer
	writeFailures(&b, r, testCatalog())
	out := b.String()
	if n := strings.Count(out, "input schema refuses"); n != 1 {
		t.Fatalf("run_code's refused arguments appear %d times, want once:\n%s", n, out)
	}
	for _, want := range []string{
		"refuses the argument(s) language, sandbox_id that",
		"3 specs: errors.status-400, exec.run-code-bash, bounds.run-code",
		"[ERR-1 EXEC-2 VAL-1]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the finding does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "zq_extra, ") || strings.Contains(out, ", zq_extra") {
		t.Errorf("the kit's bait argument is listed as refused:\n%s", out)
	}
	if !strings.Contains(out, "FAIL bounds.other ") {
		t.Errorf("a spec whose only refusal is the kit's bait is a failure of its own:\n%s", out)
	}
}

// A SESSION-1 spec that failed on sandboxes left behind is not repeated
// under the leak check's group; a spec of another rule that leaked is.
func TestLeakNotReportedTwiceForSessionSpecs(t *testing.T) {
	leak := LeakPrefix + ": the spec's sessions created 1 sandbox; 0 destroyed, 1 still running 5s after every session closed: i1 (appeared during create_sandbox, call 1 of session 1)."
	cleanup := failedSpec("cleanup.shutdown", "SESSION-1", "after the server shut down: sandboxes i1 still exist 5s later")
	cleanup.AdditionalFailures = []types.AdditionalFailure{{Failure: types.Failure{Message: leak}}}
	exec := failedSpec("exec.run-code-bash", "EXEC-2", "run_code: want stdout hi")
	exec.AdditionalFailures = []types.AdditionalFailure{{Failure: types.Failure{Message: leak}}}
	var b bytes.Buffer
	writeFailures(&b, ginkgo.Report{SpecReports: []types.SpecReport{cleanup, exec}}, testCatalog())
	out := b.String()
	if strings.Contains(out, "cleanup.shutdown: the spec's sessions") {
		t.Errorf("the cleanup spec's own failure is repeated under the leak check:\n%s", out)
	}
	if !strings.Contains(out, "exec.run-code-bash: the spec's sessions") {
		t.Errorf("the exec spec's leak is not reported:\n%s", out)
	}
	if !strings.Contains(out, "FAIL cleanup.shutdown") {
		t.Errorf("the cleanup spec's own failure is gone:\n%s", out)
	}
}

// A group of specs that met the same problem through different tools is
// headed by the tools they called, most frequent first, not by the first
// member's call alone.
func TestGroupHeadingNamesTheToolsCalled(t *testing.T) {
	r := ginkgo.Report{SpecReports: []types.SpecReport{
		failedSpec("exec.one", "EXEC-2", `kill_sandbox: protocol error: calling "tools/call": EOF`),
		failedSpec("exec.two", "EXEC-2", `run_command: protocol error: calling "tools/call": EOF`),
		failedSpec("exec.three", "EXEC-2", `run_command: protocol error: calling "tools/call": EOF`),
		failedSpec("exec.four", "EXEC-2", `write_file(owned): protocol error: calling "tools/call": EOF`),
	}}
	var b bytes.Buffer
	writeFailures(&b, r, testCatalog())
	if want := `FAIL [EXEC-2] run_command (2), kill_sandbox (1), write_file (1): protocol error: calling "tools/call": EOF`; !strings.Contains(b.String(), want) {
		t.Errorf("the heading does not name the tools called; want %q:\n%s", want, b.String())
	}
}

// A call that acted on another sandbox than it named is a finding under
// its own rule (SESSION-2), not the running spec's, whether it is the
// spec's only failure or follows another; JSON and JUnit readers see the
// rule among the spec's labels.
func TestWrongSandboxHasItsOwnRule(t *testing.T) {
	wrong := WrongSandboxPrefix + ": run_command named sandbox ia, but its daemon requests went to sandbox ib"
	alone := failedSpec("leakage.dataplane-success", "LIST-1", wrong)
	after := failedSpec("exec.run-code-bash", "EXEC-2", "run_code: want stdout hi")
	after.AdditionalFailures = []types.AdditionalFailure{{Failure: types.Failure{Message: wrong}}}
	r := Conclude(ginkgo.Report{SpecReports: []types.SpecReport{alone, after}})
	cat := testCatalog()
	cat.SpecRules = map[string][]string{"leakage.dataplane-success": {"LIST-1"}, "exec.run-code-bash": {"EXEC-2"}}
	var b bytes.Buffer
	writeFailures(&b, r, cat)
	out := b.String()
	for _, want := range []string{
		"FAIL [SESSION-2] " + CauseWrongSandbox,
		"leakage.dataplane-success: run_command named sandbox ia, but its daemon requests went to sandbox ib",
		"exec.run-code-bash: run_command named sandbox ia",
		"FAIL exec.run-code-bash [EXEC-2] ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "[LIST-1]") {
		t.Errorf("the wrong-sandbox finding is under the running spec's rule:\n%s", out)
	}
	for _, sr := range r.SpecReports {
		if !slices.Contains(sr.Labels(), WrongSandboxRule) {
			t.Errorf("%s: labels %v lack %s", sr.LeafNodeText, sr.Labels(), WrongSandboxRule)
		}
	}
}
