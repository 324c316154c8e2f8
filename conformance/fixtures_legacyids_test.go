package conformance

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"
)

// legacyIDFilter keeps the legacy-ID fixture runs short: the families that
// look sandboxes up in the fake's journal (renewals, connects, kills,
// leases, the daemon requests of exec and files) and the leak and
// wrong-sandbox checks, in 2025 sessions. exec.timeout-is-tool-error waits
// for a timeout.
const legacyIDFilter = "era-legacy && (delegation || leakage || renewal || lease || files || exec) && !exec.timeout-is-tool-error"

// legacyIDTrueDefects are the specs of legacyIDFilter the fixed legacy-ID
// fixture fails, each for what its e2b 1.x client does: it lists with the
// v1 GET /sandboxes, which shows running sandboxes only and pages nothing,
// where LIST-1 and LIST-6 demand every running and paused sandbox through
// GET /v2/sandboxes.
var legacyIDTrueDefects = []string{"delegation.list-delegates", "delegation.list-offset-walks-cursor", "delegation.list-status-filter"}

// legacyResultDefects are the further specs the fixed fork fails when its
// results pass on the 1.x SDK's "<id>-<clientID>" (-legacy-results), as
// Python 1.x servers do: the clientID is an account identifier no result
// may hold (META-4; the kit's fake makes it a canary), and a sandbox_id is
// returned bare (META-5).
var legacyResultDefects = []string{
	"delegation.get-external", "leakage.faults", "leakage.metadata-shape", "leakage.metadata-times-in-utc", "leakage.metadata-unreported",
}

// legacyIDLookups are specs of legacyIDFilter that find the server's
// requests in the fake's journal, and its sandboxes in the fake, by the ID
// the server returned, while the fixture's client named the sandbox
// "<id>-<clientID>" on the wire (and, with -legacy-results, in its
// results): they pass only when the kit's lookups read both forms as one
// sandbox.
var legacyIDLookups = []string{
	"delegation.get-owned-refreshes", "renewal.external-never-renewed", "renewal.external-keeps-end-time",
	"lease.quiet-after-requests", "lease.renewal-bounded", "exec.run-command-streams", "leakage.metadata-shape",
}

// TestKitOnLegacyIDFixture runs the kit with --profile explicit-ids against
// the fixture whose client speaks e2b 1.x's wire with legacy
// "<id>-<clientID>" IDs (internal/fixtures/legacyids), fixed and unfixed.
// The fixed fork fails exactly its 1.x list's true defects, and the specs
// that look its legacy-ID requests up in the journal pass; with its results
// naming sandboxes "<id>-<clientID>" too, it fails only the further true
// defects of that (META-4, META-5), and the lookups still pass. The
// unfixed one,
// whose lookup falls back to the sandbox it created last, is caught acting
// on another sandbox than the call named, and the fixed fork never is.
func TestKitOnLegacyIDFixture(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the kit twice")
	}
	bins := buildFixtures(t, "./internal/fixtures/legacyids")
	run := func(args ...string) (summary string, passed []string) {
		return runLegacyIDs(t, bins, legacyIDFilter, args...)
	}

	sum, passed := run("-fixed")
	if got := failedSpecs(sum); !slices.Equal(got, legacyIDTrueDefects) {
		t.Errorf("the fixed fork failed %v\nwant exactly its 1.x list's defects %v", got, legacyIDTrueDefects)
	}
	for _, id := range legacyIDLookups {
		if !slices.Contains(passed, id) {
			t.Errorf("%s did not pass against the fixed fork: a journal lookup missed its legacy-ID requests", id)
		}
	}
	if strings.Contains(sum, "but its daemon requests went to sandbox") {
		t.Errorf("the fixed fork was said to act on another sandbox:\n%s", sum)
	}

	sum, passed = run("-fixed", "-legacy-results")
	want := slices.Sorted(slices.Values(append(slices.Clone(legacyIDTrueDefects), legacyResultDefects...)))
	if got := failedSpecs(sum); !slices.Equal(got, want) {
		t.Errorf("the fixed fork with legacy IDs in its results failed %v\nwant exactly %v", got, want)
	}
	for _, id := range legacyIDLookups {
		if id != "leakage.metadata-shape" && !slices.Contains(passed, id) {
			t.Errorf("%s did not pass against legacy IDs in results: a lookup missed them", id)
		}
	}
	if !strings.Contains(sum, `holds the secret "canaryclient`) || !strings.Contains(sum, "META-5: get_sandbox names the sandbox asked for with a client suffix") {
		t.Errorf("the summary does not name the clientID in results (META-4) or the suffixed sandbox_id (META-5):\n%s", sum)
	}

	sum, _ = run()
	if !strings.Contains(sum, "named sandbox ") || !strings.Contains(sum, "but its daemon requests went to sandbox") {
		t.Errorf("the kit did not report the unfixed fork's call that named one sandbox and acted on another:\n%s", sum)
	}
}

// runLegacyIDs runs the kit with --profile explicit-ids and filter against
// the legacy-ID fixture started with args, and returns the summary and the
// passed specs.
func runLegacyIDs(t *testing.T, bins map[string]string, filter string, args ...string) (summary string, passed []string) {
	t.Helper()
	report := filepath.Join(t.TempDir(), "report.json")
	cmd := exec.Command(bins["sandboxkit"], "conform", "--server-cmd", strings.Join(append([]string{bins["legacyids"]}, args...), " "),
		"--profile", "explicit-ids", "--label-filter", filter, "--json-report", report)
	cmd.Env = os.Environ()
	out, _ := cmd.CombinedOutput()
	summary = summaryOf(string(out))
	t.Logf("kit output for legacyids %v (%s): %d lines; summary:\n%s", args, filter, strings.Count(string(out), "\n"), summary)
	return summary, passedSpecs(t, report)
}

// TestKitFaultsLegacyIDFixtureLists runs the errors matrix against the
// fixed legacy-ID fixture, whose e2b 1.x client lists with the v1
// GET /sandboxes and connects with GET /sandboxes/{id}: the matrix faults
// those routes too, so every errors.status-*, reset and malformed spec is
// exercised (none inconclusive) and passes on the fork, which maps them.
func TestKitFaultsLegacyIDFixtureLists(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the kit")
	}
	bins := buildFixtures(t, "./internal/fixtures/legacyids")
	sum, passed := runLegacyIDs(t, bins, "era-legacy && errors", "-fixed")
	if got := failedSpecs(sum); len(got) != 0 {
		t.Errorf("the fixed fork failed %v under the errors matrix", got)
	}
	if strings.Contains(sum, "fault never exercised") {
		t.Errorf("a fault of the errors matrix missed the fork's 1.x requests:\n%s", sum)
	}
	for _, f := range errsFaults() {
		if id := "errors." + f.name; !slices.Contains(passed, id) {
			t.Errorf("%s did not pass against the fixed fork", id)
		}
	}
}

// passedSpecs reads the IDs of the passed specs from a Ginkgo JSON report.
func passedSpecs(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the kit wrote no JSON report: %v", err)
	}
	var reports []types.Report
	if err := json.Unmarshal(data, &reports); err != nil {
		t.Fatalf("read the JSON report: %v", err)
	}
	var ids []string
	for _, rep := range reports {
		for _, sr := range rep.SpecReports {
			if sr.State != types.SpecStatePassed {
				continue
			}
			for _, l := range sr.Labels() {
				if specIDLabel.MatchString(l) {
					ids = append(ids, l)
				}
			}
		}
	}
	slices.Sort(ids)
	return ids
}
