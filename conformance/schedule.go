package conformance

import (
	"slices"

	"github.com/onsi/ginkgo/v2/types"
)

// scheduled is one run of a spec in an era, in the order of registration.
type scheduled struct {
	spec Spec
	era  Era
}

// longFirst lists the specs that take the longest against the in-process
// reference server, longest first (the JSON report of "conform" on 2
// cores: each takes 1.5 to 5 s alone, most of it copying large payloads or
// waiting out a provider deadline, against a median spec of 0.05 s). A
// parallel run registers them ahead of the rest, in both eras, so that the
// processes take them first and the short specs fill in around them:
// claimed in catalog order, the binary family's came last and the run
// ended on them, the other processes idle.
func longFirst() []string {
	return []string{
		"leakage.faults",
		"binary.large-random-round-trip",
		"binary.upload-over-cap",
		"files.read-over-cap-points-to-download",
		"errors.hang",
		"errors.drip",
		"errors.oversized",
		"cleanup.crash-restart-sweeps",
		"background.cursor-no-loss",
		"exec.timeout-is-tool-error",
		"cleanup.idle-timeout",
		"cleanup.lost-create",
		"background.kill",
		"delegation.by-id-releases-connections",
	}
}

// schedule returns every spec in every era it runs in, in the order the
// run registers them: the catalog's (family by family), or, for a process
// of a parallel run (parallel), the longFirst specs first.
func schedule(parallel bool) []scheduled {
	var all []scheduled
	for _, family := range Families() {
		for _, spec := range Specs() {
			if spec.Family != family {
				continue
			}
			for _, era := range specEras(spec) {
				all = append(all, scheduled{spec: spec, era: era})
			}
		}
	}
	if !parallel {
		return all
	}
	long := longFirst()
	rank := func(s scheduled) int {
		if i := slices.Index(long, s.spec.ID); i >= 0 {
			return i
		}
		return len(long)
	}
	slices.SortStableFunc(all, func(a, b scheduled) int { return rank(a) - rank(b) })
	return all
}

// InCatalogOrder sorts the spec reports of a parallel run, whose processes
// ran the long specs first (schedule), into the catalog's order, so that
// its summary and reports read as a serial run's. Reports of setup nodes
// stay ahead of every spec, those of nodes after the suite behind.
func InCatalogOrder(reports types.SpecReports) {
	index := map[string]int{}
	for i, s := range schedule(false) {
		index[runID(s.spec.ID, s.era)] = i
	}
	rank := func(sr types.SpecReport) int {
		if sr.LeafNodeType != types.NodeTypeIt {
			if sr.LeafNodeType.Is(types.NodeTypeAfterSuite | types.NodeTypeSynchronizedAfterSuite | types.NodeTypeReportAfterSuite | types.NodeTypeCleanupAfterSuite) {
				return len(index)
			}
			return -1
		}
		for _, l := range sr.Labels() {
			if i, ok := index[l]; ok {
				return i
			}
		}
		return len(index)
	}
	slices.SortStableFunc(reports, func(a, b types.SpecReport) int { return rank(a) - rank(b) })
}
