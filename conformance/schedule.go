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
// reference server (the JSON report of "conform" on 2 cores: each takes 0.7
// to 3 s alone, against a median spec of 0.05 s). A parallel run registers
// them ahead of the rest, in both eras, so that the processes take them
// first and the short specs fill in around them: claimed in catalog order,
// the binary family's came last and the run ended on them, the other
// processes idle. They are of two kinds, taken in turn (interleave): specs
// that wait (a provider deadline, a command's timeout, an idle timeout)
// cost little CPU, and specs that work (copying large payloads, hundreds of
// faulted calls) cost much; all the working ones at once left the CPU the
// bottleneck for two seconds, all the waiting ones at once left it idle.
func longFirst() []string {
	waiting := []string{
		"errors.hang",
		"errors.drip",
		"exec.timeout-is-tool-error",
		"background.cursor-no-loss",
		"cleanup.idle-timeout",
		"cleanup.lost-create",
		"cleanup.crash-restart-sweeps",
		"lease.quiet-after-requests",
	}
	working := []string{
		"leakage.faults",
		"binary.large-random-round-trip",
		"binary.upload-over-cap",
		"files.read-over-cap-points-to-download",
		"errors.oversized",
		"cleanup.close-destroy-retries",
		"background.kill",
		"delegation.by-id-releases-connections",
	}
	return interleave(waiting, working)
}

// interleave returns a[0], b[0], a[1], b[1], ..., and the rest of the
// longer list.
func interleave(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	for i := range max(len(a), len(b)) {
		if i < len(a) {
			out = append(out, a[i])
		}
		if i < len(b) {
			out = append(out, b[i])
		}
	}
	return out
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
