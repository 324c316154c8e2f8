package conformance

import (
	"bytes"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

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
	writeFailures(&b, r)
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
