package summary

import (
	"bytes"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

func specReport(id string, state types.SpecState, msg string, rules ...string) types.SpecReport {
	labels := append([]string{"bounds", id}, rules...)
	return types.SpecReport{
		LeafNodeType:   types.NodeTypeIt,
		LeafNodeLabels: labels,
		State:          state,
		Failure:        types.Failure{Message: msg},
	}
}

func TestCoverage(t *testing.T) {
	r := ginkgo.Report{SpecReports: []types.SpecReport{
		specReport("bounds.a", types.SpecStatePassed, "", "LIST-3", "VAL-1"),
		specReport("bounds.b", types.SpecStateFailed, "boom", "LIST-3"),
		specReport("bounds.c", types.SpecStateSkipped, "the server advertises no get_sandbox\nmore", "VAL-1", "GET-1"),
		specReport("bounds.d", types.SpecStateSkipped, "", "GET-2"),
	}}
	got := map[string]RuleCoverage{}
	for _, c := range Coverage(r, testCatalog()) {
		got[c.Rule] = c
	}
	if c := got["LIST-3"]; !c.Checked() || c.Ran != 2 {
		t.Errorf("LIST-3: %+v, want checked by 2 specs (a failure is still a check)", c)
	}
	if c := got["VAL-1"]; !c.Partly() || c.SkippedSpec != "bounds.c" || c.Why != "the server advertises no get_sandbox" {
		t.Errorf("VAL-1: %+v, want partly, skipped by bounds.c with its reason's first line", c)
	}
	if c := got["GET-2"]; c.Checked() || c.Partly() || c.Why != "not selected" {
		t.Errorf("GET-2: %+v, want not checked, not selected", c)
	}
	if c := got["LIST-1"]; c.Ran != 0 || c.Skipped != 0 {
		t.Errorf("LIST-1: %+v, want no spec", c)
	}
	var b bytes.Buffer
	writeCoverage(&b, r, testCatalog())
	out := b.String()
	for _, want := range []string{
		"rule coverage: 1 of ",
		"partly  VAL-1      1 of 2 specs ran; bounds.c skipped: the server advertises no get_sandbox",
		"GET-1: the server advertises no get_sandbox",
		"GET-2: not selected",
		"LIST-1 ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("coverage output lacks %q:\n%s", want, out)
		}
	}
}
