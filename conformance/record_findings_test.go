package conformance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/sandboxkit/sandboxkit/conformance/internal/record"
	"github.com/sandboxkit/sandboxkit/evidence"
)

// A run whose specs all passed but that has a TOOLS-3 finding writes a
// bundle that carries the finding and says the run failed; a run without
// one says it passed. Both manifests verify.
func TestEvidenceKeepsFindings(t *testing.T) {
	passed := func(id string, entries ...types.ReportEntry) types.SpecReport {
		fam, _, _ := strings.Cut(id, ".")
		return types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: "[" + id + "] a spec",
			LeafNodeLabels: []string{fam, id, "EXEC-2"}, State: types.SpecStatePassed, ReportEntries: entries}
	}
	finding := types.ReportEntry{Name: findingEntry, Value: types.WrapEntryValue("TOOLS-3 runCode")}
	for _, c := range []struct {
		name     string
		report   ginkgo.Report
		status   string
		findings int
	}{
		{"finding", ginkgo.Report{SpecReports: []types.SpecReport{passed("exec.run-code-bash", finding), passed("exec.run-code-javascript", finding)}}, evidence.StatusFailed, 1},
		{"clean", ginkgo.Report{SpecReports: []types.SpecReport{passed("exec.run-code-bash")}}, evidence.StatusPassed, 0},
	} {
		dir := filepath.Join(t.TempDir(), c.name)
		if _, err := record.Write(dir, newRun(NewConfig(), testSeams{}).evidence(c.report, nil)); err != nil {
			t.Fatal(err)
		}
		// A bundle of two specs lacks the required ones; its manifest
		// (totals, status, findings) and checksums must still check.
		if err := evidence.Verify(dir, &evidence.VerifyOptions{}); err != nil &&
			(strings.Contains(err.Error(), evidence.FileManifest) || strings.Contains(err.Error(), evidence.FileChecksums)) {
			t.Errorf("%s: the bundle's manifest does not verify: %v", c.name, err)
		}
		data, err := os.ReadFile(filepath.Join(dir, evidence.FileManifest))
		if err != nil {
			t.Fatal(err)
		}
		var m evidence.Manifest
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		if m.Status != c.status || len(m.Findings) != c.findings || m.Totals.Failed != 0 {
			t.Errorf("%s: status %q with %d findings (%d failed), want %q with %d", c.name, m.Status, len(m.Findings), m.Totals.Failed, c.status, c.findings)
		}
		if c.findings > 0 {
			f := m.Findings[0]
			if f.Rule != "TOOLS-3" || strings.Join(f.Tools, ",") != "runCode" || strings.Join(f.Specs, ",") != "exec.run-code-bash,exec.run-code-javascript" {
				t.Errorf("finding %+v", f)
			}
			summary, _ := os.ReadFile(filepath.Join(dir, evidence.FileSummary))
			if !strings.Contains(string(summary), "**Status: failed.**") || !strings.Contains(string(summary), "| TOOLS-3 | runCode |") {
				t.Errorf("summary.md does not show the finding and the status:\n%s", summary)
			}
		}
	}
}
