package conformance

import (
	"slices"
	"testing"
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
