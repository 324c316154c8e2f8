package summary

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

// RuleCoverage says how far a run checked one contract rule.
type RuleCoverage struct {
	Rule string
	// Ran and Skipped count the specs citing the rule that ran (passed or
	// failed) and that were skipped.
	Ran, Skipped int
	// Why is the skip reason of the first skipped spec ("not selected" for
	// a spec the label filter or focus left out).
	Why string
	// SkippedSpec is that spec's ID.
	SkippedSpec string
}

// Checked reports whether every spec citing the rule ran.
func (c RuleCoverage) Checked() bool { return c.Ran > 0 && c.Skipped == 0 }

// Partly reports whether some specs citing the rule ran and some did not.
func (c RuleCoverage) Partly() bool { return c.Ran > 0 && c.Skipped > 0 }

// Coverage returns, for every rule of the contract in its order, how far
// the run of the report checked it.
func Coverage(r ginkgo.Report, cat Catalog) []RuleCoverage {
	byRule := map[string]*RuleCoverage{}
	for _, rule := range cat.Rules {
		byRule[rule] = &RuleCoverage{Rule: rule}
	}
	for _, sr := range r.SpecReports {
		if sr.LeafNodeType != types.NodeTypeIt {
			continue
		}
		_, id, rules := cat.Classify(sr.Labels())
		skipped := sr.State.Is(types.SpecStateSkipped | types.SpecStatePending)
		for _, rule := range rules {
			c := byRule[rule]
			if c == nil {
				continue
			}
			if !skipped {
				c.Ran++
				continue
			}
			c.Skipped++
			if c.Why == "" {
				c.SkippedSpec, c.Why = id, skipReason(sr)
			}
		}
	}
	out := make([]RuleCoverage, 0, len(byRule))
	for _, rule := range cat.Rules {
		out = append(out, *byRule[rule])
	}
	return out
}

// skipReason is the first line of a skipped spec's reason.
func skipReason(sr types.SpecReport) string {
	msg := strings.TrimSpace(sr.Failure.Message)
	if msg == "" {
		return "not selected"
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return truncate(msg, 160)
}

// writeCoverage prints the rule coverage of a run: counts, then one line
// for each rule only partly checked or not checked at all, with the reason.
func writeCoverage(w io.Writer, r ginkgo.Report, cat Catalog) {
	cov := Coverage(r, cat)
	var partly, none []RuleCoverage
	checked := 0
	for _, c := range cov {
		switch {
		case c.Checked():
			checked++
		case c.Partly():
			partly = append(partly, c)
		default:
			none = append(none, c)
		}
	}
	fmt.Fprintf(w, "rule coverage: %d of %d rules checked by every spec that cites them, %d partly, %d not at all\n",
		checked, len(cov), len(partly), len(none))
	// Rules left out by the same reason are listed together.
	groups := map[string][]string{}
	for _, c := range none {
		why := c.Why
		if c.Ran == 0 && c.Skipped == 0 {
			why = "no spec cites it"
		}
		groups[why] = append(groups[why], c.Rule)
	}
	for _, c := range partly {
		fmt.Fprintf(w, "  partly  %-10s %d of %d specs ran; %s skipped: %s\n", c.Rule, c.Ran, c.Ran+c.Skipped, c.SkippedSpec, c.Why)
	}
	whys := make([]string, 0, len(groups))
	for why := range groups {
		whys = append(whys, why)
	}
	sort.Strings(whys)
	for _, why := range whys {
		fmt.Fprintf(w, "  not     %s: %s\n", strings.Join(groups[why], " "), why)
	}
}
