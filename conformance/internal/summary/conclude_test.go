package summary

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"
)

// withEntry adds a report entry to a spec's report.
func withEntry(sr types.SpecReport, name, value string) types.SpecReport {
	sr.ReportEntries = append(sr.ReportEntries, types.ReportEntry{Name: name, Value: types.WrapEntryValue(value)})
	return sr
}

// withLeak adds the leak check's failure to a spec's report.
func withLeak(sr types.SpecReport) types.SpecReport {
	sr.AdditionalFailures = append(sr.AdditionalFailures, types.AdditionalFailure{State: types.SpecStateFailed,
		Failure: types.Failure{Message: LeakPrefix + ": 1 sandbox created, 0 destroyed, 1 left: ileft (appeared during run_command)"}})
	return sr
}

const portWhy = "not testable: the server called port 3000 of a sandbox"

// Each spec's outcome, as Conclude decides it: inconclusive only when the
// spec saw no defect; a defect or a leak fails it with the defect alone,
// under the defect's rule.
func TestConcludeDecidesOutcomes(t *testing.T) {
	own := "1 problem(s):\n  run_command(status 500): category \"\", want \"unavailable\""
	cases := []struct {
		name       string
		spec       types.SpecReport
		state      types.SpecState
		first      string // the first line of the concluded message
		wantLabel  string
		inconclude bool
	}{
		{"not testable alone", withEntry(failedSpec("errors.status-500", "ERR-1", own), EntryInconclusive, portWhy),
			types.SpecStateSkipped, "INCONCLUSIVE (not testable): the server called port 3000 of a sandbox", "", true},
		{"not testable with a raw URL in a result",
			withEntry(withEntry(failedSpec("errors.status-500", "ERR-1", own), EntryInconclusive, portWhy),
				EntryDefect, DefectValue("ERR-3", `run_command(status 500): holds "http://" (a URL or stack trace)`)),
			types.SpecStateFailed, "1 defect found although the spec could not be judged:", "ERR-3", false},
		{"not testable with a sandbox left running", withLeak(withEntry(failedSpec("exec.run-code", "EXEC-2", own), EntryInconclusive, portWhy)),
			types.SpecStateFailed, LeakPrefix + ": 1 sandbox created, 0 destroyed, 1 left: ileft (appeared during run_command)", "SESSION-1", false},
		{"a plain failure with a leak", withLeak(failedSpec("exec.run-code", "EXEC-2", own)),
			types.SpecStateFailed, "1 problem(s):", "SESSION-1", false},
		{"a plain failure", failedSpec("exec.run-code", "EXEC-2", own), types.SpecStateFailed, "1 problem(s):", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			once := Conclude(ginkgo.Report{SpecReports: []types.SpecReport{c.spec}})
			twice := Conclude(once)
			for i, r := range []ginkgo.Report{once, twice} {
				got := r.SpecReports[0]
				if got.State != c.state || firstLine(got.Failure.Message) != c.first || IsInconclusive(got) != c.inconclude {
					t.Errorf("pass %d: state %s, inconclusive %v, message %q; want %s, %v, first line %q", i+1, got.State, IsInconclusive(got), got.Failure.Message, c.state, c.inconclude, c.first)
				}
				if c.wantLabel != "" && !slices.Contains(got.Labels(), c.wantLabel) {
					t.Errorf("pass %d: labels %v do not carry %s", i+1, got.Labels(), c.wantLabel)
				}
				if n := len(got.AdditionalFailures); c.name == "not testable with a sandbox left running" && n != 0 {
					t.Errorf("pass %d: %d additional failures, want the leak alone", i+1, n)
				}
			}
		})
	}
}

// The summary counts inconclusive specs on their own, lists them by
// reason, and prints a defect an inconclusive spec saw as a failure; the
// leak of a spec that is not SESSION-1's own is printed although its
// labels now carry SESSION-1.
func TestSummaryCountsInconclusive(t *testing.T) {
	own := "run_code: protocol error: calling \"tools/call\": timeout"
	r := Conclude(ginkgo.Report{SpecReports: []types.SpecReport{
		withEntry(failedSpec("exec.run-code", "EXEC-2", own), EntryInconclusive, portWhy),
		withEntry(failedSpec("exec.run-code-bash", "EXEC-2", own), EntryInconclusive, portWhy),
		withEntry(withEntry(failedSpec("errors.status-500", "ERR-1", own), EntryInconclusive, portWhy),
			EntryDefect, DefectValue("ERR-3", `run_command(status 500): holds "https://" (a URL or stack trace)`)),
		withLeak(failedSpec("exec.run-command", "EXEC-1", own)),
	}})
	cat := testCatalog()
	cat.SpecRules = map[string][]string{"exec.run-command": {"EXEC-1"}}
	var b bytes.Buffer
	Write(&b, r, cat)
	out := b.String()
	for _, want := range []string{
		"  exec          0 passed    1 failed    2 inconclusive    0 skipped",
		"  INCONCLUSIVE (not testable) the server called port 3000 of a sandbox\n       2 specs not judged: exec.run-code, exec.run-code-bash",
		`FAIL errors.status-500 [ERR-1 ERR-3] ERR-3: run_command(status 500): holds "https://"`,
		"FAIL [SESSION-1] " + CauseLeak,
		"0 passed, 2 failed, 0 skipped, 2 inconclusive",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary lacks %q:\n%s", want, out)
		}
	}
	if c := Count(r); c != (Counts{Failed: 2, Inconclusive: 2}) {
		t.Errorf("Count = %+v", c)
	}
	if r.SuiteSucceeded {
		t.Error("a suite with failed specs succeeded")
	}
	alone := Conclude(ginkgo.Report{SpecReports: []types.SpecReport{withEntry(failedSpec("exec.run-code", "EXEC-2", own), EntryInconclusive, portWhy)}})
	if !alone.SuiteSucceeded {
		t.Error("a suite whose only failure was inconclusive did not succeed")
	}
}

// JUnit readers see an inconclusive spec as a skipped test with its
// reason, and a leak under SESSION-1 in the test's name (its labels).
func TestJUnitShowsInconclusiveAndLeakRule(t *testing.T) {
	r := Conclude(ginkgo.Report{SuiteDescription: "kit", SpecReports: []types.SpecReport{
		withEntry(failedSpec("exec.run-code", "EXEC-2", "boom"), EntryInconclusive, portWhy),
		withLeak(failedSpec("exec.run-command", "EXEC-1", "boom")),
	}})
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := reporters.GenerateJUnitReport(r, path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	xml := string(data)
	for _, want := range []string{`<skipped message="skipped - INCONCLUSIVE (not testable)`, `exec.run-command, EXEC-1, SESSION-1]`, `failures="1"`, `skipped="1"`} {
		if !strings.Contains(xml, want) {
			t.Errorf("the JUnit report lacks %q:\n%s", want, xml)
		}
	}
}

// Faults never exercised because the server's schema refused the kit's
// arguments are one group, headed by that cause, whatever case came
// first and in whatever order the refusal listed the arguments.
func TestInconclusiveGroupsByKnownCause(t *testing.T) {
	why := func(label, args string) string {
		return InconclusiveValue(InconclusiveNotExercised, label+": the call made no POST /sandboxes/{sandboxID}/connect request, so the fault was never exercised; "+
			`it answered: validating "arguments": validating root: unexpected additional properties [`+args+`] (and 15 more cases alike)`)
	}
	r := Conclude(ginkgo.Report{SpecReports: []types.SpecReport{
		withEntry(failedSpec("errors.status-400", "ERR-1", "boom"), EntryInconclusive, why("run_code(external) status-400", `"language" "sandbox_id"`)),
		withEntry(failedSpec("errors.malformed", "ERR-1", "boom"), EntryInconclusive, why("run_code(external) malformed", `"sandbox_id" "language"`)),
	}})
	var b bytes.Buffer
	writeInconclusive(&b, r, testCatalog())
	out := b.String()
	if !strings.Contains(out, "INCONCLUSIVE (fault never exercised) run_code's input schema refuses the argument(s) language, sandbox_id") ||
		!strings.Contains(out, "2 specs not judged: errors.status-400, errors.malformed") {
		t.Errorf("the two specs are not one group under the refusal:\n%s", out)
	}
}

// An inconclusive spec's defect heads its line in the summary, even when
// the reason it could not be judged quotes a refusal the summary knows.
func TestDefectHeadsInconclusiveFailure(t *testing.T) {
	why := InconclusiveValue(InconclusiveNotExercised, `run_code(external) status-400: the call made no request; it answered: `+
		`validating "arguments": validating root: unexpected additional properties ["language"]`)
	r := Conclude(ginkgo.Report{SpecReports: []types.SpecReport{
		withEntry(withEntry(failedSpec("errors.status-400", "ERR-1", "boom"), EntryInconclusive, why),
			EntryDefect, DefectValue("ERR-3", `run_code(owned) status-400: holds "https://" (a URL or stack trace)`)),
	}})
	var b bytes.Buffer
	writeFailures(&b, r, testCatalog())
	if out := b.String(); !strings.Contains(out, `ERR-3: run_code(owned) status-400: holds "https://"`) || strings.Contains(out, "input schema refuses") {
		t.Errorf("the defect does not head the spec's line:\n%s", out)
	}
}
