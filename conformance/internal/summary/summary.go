// Package summary reads a finished conformance run's Ginkgo report for a
// person: passed, failed and skipped per family, the failures grouped by
// first cause, why specs were skipped, how the server processes ended, and
// how far each contract rule was checked. It knows the kit's catalog only
// through [Catalog], and the kit's specs reach it only through the report
// entries and message prefixes named here.
package summary

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

// Report entries and message prefixes the kit's specs leave for the
// summary.
const (
	// EntryCause names the report entry that states a failure's first
	// cause, when the kit could diagnose it.
	EntryCause = "sandboxkit cause"
	// EntryEndings names the report entry that counts, for one spec, how
	// its stdio server processes ended ("how=n;how=n").
	EntryEndings = "sandboxkit process endings"
	// RunErrorPrefix begins the failure of a run that could not start (the
	// server could not be reached or spoke no MCP).
	RunErrorPrefix = "the run could not start"
	// LeakPrefix begins every leak-check failure message.
	LeakPrefix = "SESSION-1: sandboxes left running"
	// CauseLeak is the cause of every leak-check failure.
	CauseLeak = "SESSION-1: the server leaves sandboxes running after its sessions close"
	// WrongSandboxRule is the rule a call that names a sandbox and acts on
	// another breaks: the contract's tools act on the sandbox the call
	// names (SESSION-2 says which one a call without one uses; with one,
	// that one).
	WrongSandboxRule = "SESSION-2"
	// WrongSandboxPrefix begins every wrong-sandbox failure message; the
	// calls follow on the same line.
	WrongSandboxPrefix = WrongSandboxRule + ": a call acted on another sandbox than the one named"
	// CauseWrongSandbox is the cause of every wrong-sandbox failure.
	CauseWrongSandbox = WrongSandboxRule + ": the server acts on another sandbox than the call names"
	// ClaimedElsewhere is the skip message of a spec that another process
	// of the same run claimed.
	ClaimedElsewhere = "claimed by another process of this run"
)

// How a stdio server's process ended when the kit closed its session.
const (
	EndedOnEOF     = "exited on EOF"
	EndedOnSIGTERM = "needed SIGTERM"
	EndedKilled    = "killed (SIGKILL)"
	EndedEarly     = "had already exited"
)

// Catalog is what the summary knows of the kit's catalog.
type Catalog struct {
	// Families are the family labels in report order.
	Families []string
	// Tools are the contract's tool names.
	Tools []string
	// Rules are the contract's rule IDs in its order.
	Rules []string
	// SpecRules are each spec's own rules, by spec ID: a failed spec's
	// labels also carry the rules of the defects it saw (Conclude).
	SpecRules map[string][]string
}

// ownRules returns the spec's own rules: from SpecRules when the catalog
// has them, else its rule labels.
func (cat Catalog) ownRules(id string, labelled []string) []string {
	if own, ok := cat.SpecRules[id]; ok {
		return own
	}
	return labelled
}

// ruleLabel matches a rule ID among a spec's labels.
var ruleLabel = regexp.MustCompile(`^[A-Z]+-[0-9]+$`)

// Classify reads a spec's family, ID and rule labels.
func (cat Catalog) Classify(labels []string) (family, id string, rules []string) {
	for _, l := range labels {
		switch {
		case slices.Contains(cat.Families, l):
			family = l
		case ruleLabel.MatchString(l):
			rules = append(rules, l)
		case strings.Contains(l, "."):
			id = l
		}
	}
	return family, id, rules
}

// Write prints passed/failed/inconclusive/skipped per family, the
// failures grouped by first cause (one line for a cause that one spec met,
// the cause and the specs it affected for one that several met), the
// inconclusive specs by reason, why specs were skipped, how the server
// processes the kit started ended, and the rule coverage. r is a report
// [Conclude] has decided.
func Write(w io.Writer, r ginkgo.Report, cat Catalog) {
	byFamily := map[string]*Counts{}
	for _, sr := range r.SpecReports {
		if sr.LeafNodeType != types.NodeTypeIt {
			continue
		}
		fam, _, _ := cat.Classify(sr.Labels())
		if byFamily[fam] == nil {
			byFamily[fam] = &Counts{}
		}
		byFamily[fam].add(sr)
	}
	fmt.Fprintln(w, "\nsandboxkit conformance summary")
	total := Counts{}
	for _, f := range cat.Families {
		c := byFamily[f]
		if c == nil {
			continue
		}
		fmt.Fprintf(w, "  %-11s %3d passed  %3d failed  %3d inconclusive  %3d skipped\n", f, c.Passed, c.Failed, c.Inconclusive, c.Skipped)
		total.Passed += c.Passed
		total.Failed += c.Failed
		total.Inconclusive += c.Inconclusive
		total.Skipped += c.Skipped
	}
	writeFailures(w, r, cat)
	writeInconclusive(w, r, cat)
	writeSkips(w, r, cat)
	writeEndings(w, r)
	writeCoverage(w, r, cat)
	fmt.Fprintln(w, total.String())
}

// Counts are a run's specs by outcome.
type Counts struct{ Passed, Failed, Inconclusive, Skipped int }

// add counts one spec's outcome.
func (c *Counts) add(sr types.SpecReport) {
	switch {
	case sr.State.Is(types.SpecStatePassed):
		c.Passed++
	case IsInconclusive(sr):
		c.Inconclusive++
	case sr.State.Is(types.SpecStateSkipped | types.SpecStatePending):
		c.Skipped++
	case sr.State.Is(types.SpecStateFailureStates):
		c.Failed++
	}
}

// String is the summary's last line: "3 passed, 1 failed, 2 skipped",
// with ", N inconclusive" when there are any.
func (c Counts) String() string {
	s := fmt.Sprintf("%d passed, %d failed, %d skipped", c.Passed, c.Failed, c.Skipped)
	if c.Inconclusive > 0 {
		s += fmt.Sprintf(", %d inconclusive", c.Inconclusive)
	}
	return s
}

// Count counts the specs of a concluded report by outcome.
func Count(r ginkgo.Report) Counts {
	var c Counts
	for _, sr := range r.SpecReports {
		if sr.LeafNodeType == types.NodeTypeIt && !(sr.State.Is(types.SpecStateSkipped) && sr.Failure.Message == ClaimedElsewhere) {
			c.add(sr)
		}
	}
	return c
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// plural is "1 spec" or "n specs".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
