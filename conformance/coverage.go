package conformance

import (
	"github.com/onsi/ginkgo/v2"

	"github.com/sandboxkit/sandboxkit/conformance/internal/summary"
)

// RuleCoverage says how far a run checked one contract rule.
type RuleCoverage = summary.RuleCoverage

// Coverage returns, for every rule of the contract in its order, how far
// the run of the report checked it.
func Coverage(r ginkgo.Report) []RuleCoverage { return summary.Coverage(r, catalog()) }
