package conformance

import (
	"github.com/onsi/ginkgo/v2"

	"github.com/sandboxkit/sandboxkit/conformance/internal/summary"
)

// A spec the kit cannot judge is inconclusive, not failed, and a defect
// it saw on the way is reported whatever else happened (see
// summary.Conclude): the spec records both as it goes, and its report
// carries them when it ends.

// Why a spec could not be judged (the kinds of [TestContext.inconclusive]).
const (
	inconclusiveNotTestable  = summary.InconclusiveNotTestable
	inconclusiveNotExercised = summary.InconclusiveNotExercised
	inconclusiveNotStarted   = summary.InconclusiveNotStarted
)

// inconclusive records why the spec cannot be judged; the first reason
// stands. The spec still fails where it must (so that its checks stop),
// and [Conclude] turns that failure into the inconclusive outcome unless
// the spec also saw a defect.
func (tc *TestContext) inconclusive(kind, reason string) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.notJudged == "" {
		tc.notJudged = summary.InconclusiveValue(kind, reason)
	}
}

// defect records a defect that holds whatever the fake served (a secret,
// URL or raw provider error in a tool result; a call that acted on
// another sandbox than it named), under its rule. The spec's failure
// names it too; this keeps it when the rest of the spec is inconclusive.
func (tc *TestContext) defect(rule, what string) {
	tc.mu.Lock()
	tc.defects = append(tc.defects, summary.DefectValue(rule, what))
	tc.mu.Unlock()
}

// reportOutcome adds the spec's inconclusive reason and defects to its
// report, where Conclude reads them (in a parallel run's merged report
// too). It runs in the spec's cleanup.
func (tc *TestContext) reportOutcome() {
	tc.mu.Lock()
	why, defects := tc.notJudged, tc.defects
	tc.defects = nil
	tc.mu.Unlock()
	for _, d := range defects {
		ginkgo.AddReportEntry(summary.EntryDefect, d, ginkgo.ReportEntryVisibilityNever)
	}
	if why != "" {
		ginkgo.AddReportEntry(summary.EntryInconclusive, why, ginkgo.ReportEntryVisibilityNever)
	}
}

// Conclude returns a finished run's report with each spec's outcome
// decided: a failed spec the kit could not judge is skipped with a message
// that begins with "INCONCLUSIVE", unless it saw a defect, which it then
// fails with; a failed spec's labels carry the rules of its defects
// (SESSION-1 for a sandbox left running). The summary, the JUnit and JSON
// reports and the evidence are written from the concluded report.
func Conclude(r ginkgo.Report) ginkgo.Report { return summary.Conclude(r) }

// Verdict is how a run ended, for the command's exit status.
type Verdict int

const (
	// VerdictPass: every selected spec passed (or was skipped) and nothing
	// was found.
	VerdictPass Verdict = iota
	// VerdictFail: a spec failed or a finding was made (with a baseline:
	// the failures were not exactly the expected ones), or the run could
	// not start.
	VerdictFail
	// VerdictInconclusive: nothing failed, but some specs could not be
	// judged (not testable against the fake, a fault never exercised, a
	// server that did not start a session).
	VerdictInconclusive
)

// VerdictOf decides a concluded report's verdict, given whether
// [WriteOutcome] passed it.
func VerdictOf(r ginkgo.Report, passed bool) Verdict {
	switch {
	case !passed:
		return VerdictFail
	case summary.Count(r).Inconclusive > 0:
		return VerdictInconclusive
	}
	return VerdictPass
}
