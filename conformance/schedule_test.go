package conformance

import (
	"slices"
	"testing"

	"github.com/onsi/ginkgo/v2/types"
)

// TestScheduleKeepsEverySpec: a parallel run registers the same runs as a
// serial one (every spec in each of its eras, once), only in another
// order, with the long specs first; and every long spec is in the catalog.
func TestScheduleKeepsEverySpec(t *testing.T) {
	key := func(s scheduled) string { return runID(s.spec.ID, s.era) }
	serial, parallel := schedule(false), schedule(true)
	a, b := make([]string, 0, len(serial)), make([]string, 0, len(parallel))
	for _, s := range serial {
		a = append(a, key(s))
	}
	for _, s := range parallel {
		b = append(b, key(s))
	}
	if len(slices.Compact(slices.Sorted(slices.Values(a)))) != len(a) {
		t.Fatal("the catalog order has a run twice")
	}
	if !slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))) {
		t.Fatalf("a parallel run registers other runs than a serial one")
	}
	for _, id := range longFirst() {
		if !slices.ContainsFunc(serial, func(s scheduled) bool { return s.spec.ID == id }) {
			t.Errorf("long spec %s is not in the catalog", id)
		}
	}
	if got := parallel[0].spec.ID; got != longFirst()[0] {
		t.Errorf("a parallel run starts with %s, want %s", got, longFirst()[0])
	}
}

// TestInCatalogOrder: a parallel run's reports, in the order its
// processes ran them, are put back in the catalog's order, setup first.
func TestInCatalogOrder(t *testing.T) {
	report := func(s scheduled) types.SpecReport {
		return types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeLabels: []string{runID(s.spec.ID, s.era)}}
	}
	var reports types.SpecReports
	for _, s := range schedule(true) {
		reports = append(reports, report(s))
	}
	reports = append(reports, types.SpecReport{LeafNodeType: types.NodeTypeBeforeAll})
	InCatalogOrder(reports)
	if reports[0].LeafNodeType != types.NodeTypeBeforeAll {
		t.Fatalf("the setup report is not first")
	}
	for i, s := range schedule(false) {
		if got, want := reports[i+1].LeafNodeLabels[0], runID(s.spec.ID, s.era); got != want {
			t.Fatalf("report %d is %s, want %s", i+1, got, want)
		}
	}
}
