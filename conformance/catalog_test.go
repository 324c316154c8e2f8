package conformance

import (
	"context"
	"regexp"
	"strings"
	"testing"
)

// notCheckedBySpecs lists contract rules no kit spec can check, with the
// reason; everything else must have a spec.
var notCheckedBySpecs = map[string]string{}

// cloudOnlyRules are rules only cloud-only specs may name: results against
// a fake prove nothing about a real provider.
var cloudOnlyRules = map[string]string{
	"VERIFY-1": "a statement about evidence against real providers: the cloud-only specs, recorded in cloud evidence bundles",
}

var specIDPattern = regexp.MustCompile(`^[a-z]+\.[a-z0-9-]+$`)

// TestCatalog_EveryRuleHasASpec fails when a contract rule has no spec, when
// a spec names a rule the contract lacks, or when IDs are malformed or
// duplicated.
func TestCatalog_EveryRuleHasASpec(t *testing.T) {
	known := map[string]bool{}
	for _, r := range Rules() {
		known[r.ID] = true
	}
	covered := map[string][]string{}
	ids := map[string]bool{}
	families := map[Family]bool{}
	for _, f := range Families() {
		families[f] = true
	}
	for _, s := range Specs() {
		if !specIDPattern.MatchString(s.ID) || !strings.HasPrefix(s.ID, string(s.Family)+".") {
			t.Errorf("spec ID %q must be %q followed by a lowercase slug", s.ID, s.Family+".")
		}
		if ids[s.ID] {
			t.Errorf("spec ID %q is used twice", s.ID)
		}
		ids[s.ID] = true
		if !families[s.Family] {
			t.Errorf("spec %s has unknown family %q", s.ID, s.Family)
		}
		if s.Title == "" || s.Body == nil || len(s.Rules) == 0 {
			t.Errorf("spec %s lacks a title, a body or rules", s.ID)
		}
		if s.CloudOnly && s.NeedsFake {
			t.Errorf("spec %s is both cloud-only and needs-fake: it could never run", s.ID)
		}
		if s.CloudOnly != (s.Family == FamilyCloud) {
			t.Errorf("spec %s: cloud-only specs, and only they, belong to the %s family", s.ID, FamilyCloud)
		}
		for _, r := range s.Rules {
			if _, ok := cloudOnlyRules[r]; ok && !s.CloudOnly {
				t.Errorf("spec %s names %s, which only cloud-only specs may check", s.ID, r)
			}
			if !known[r] {
				t.Errorf("spec %s names rule %s, which the contract does not have", s.ID, r)
			}
			covered[r] = append(covered[r], s.ID)
		}
		for _, tool := range s.Tools {
			if !isContractTool(tool) {
				t.Errorf("spec %s needs tool %q, which is not a contract tool", s.ID, tool)
			}
		}
	}
	for _, id := range EveryResultRules() {
		covered[id] = append(covered[id], "(every spec's results)")
	}
	for _, r := range Rules() {
		_, exempt := notCheckedBySpecs[r.ID]
		switch {
		case len(covered[r.ID]) == 0 && !exempt:
			t.Errorf("rule %s (%s) has no spec", r.ID, r.Section)
		case len(covered[r.ID]) > 0 && exempt:
			t.Errorf("rule %s is listed as not checkable but has specs %v", r.ID, covered[r.ID])
		}
	}
}

// TestCatalog_RegistrationRefusesContradictions checks that a family's
// registration fills in the family and its defaults, and refuses a spec
// that contradicts its family or repeats what registration says.
func TestCatalog_RegistrationRefusesContradictions(t *testing.T) {
	fake := registration{family: FamilyBounds, defaults: Spec{NeedsFake: true}}
	cloud := registration{family: FamilyCloud, defaults: Spec{CloudOnly: true}}
	open := registration{family: FamilyExec}
	for _, c := range []struct {
		name string
		r    registration
		s    Spec
	}{
		{"another family", fake, Spec{ID: "bounds.x", Family: FamilyExec}},
		{"its own family named", fake, Spec{ID: "bounds.x", Family: FamilyBounds}},
		{"NeedsFake repeated", fake, Spec{ID: "bounds.x", NeedsFake: true}},
		{"CloudOnly outside registration", open, Spec{ID: "exec.x", CloudOnly: true}},
		{"CloudOnly repeated", cloud, Spec{ID: "cloud.x", CloudOnly: true}},
		{"NeedsFake in a cloud-only family", cloud, Spec{ID: "cloud.x", NeedsFake: true}},
	} {
		if _, err := c.r.register(c.s); err == nil {
			t.Errorf("%s: registration accepted %+v", c.name, c.s)
		}
	}
	got, err := fake.register(Spec{ID: "bounds.x"})
	if err != nil || got.Family != FamilyBounds || !got.NeedsFake || got.CloudOnly {
		t.Errorf("bounds registration: %+v, %v; want family bounds, NeedsFake", got, err)
	}
	got, err = open.register(Spec{ID: "exec.x", NeedsFake: true})
	if err != nil || got.Family != FamilyExec || !got.NeedsFake {
		t.Errorf("exec registration of a NeedsFake spec: %+v, %v; want it kept", got, err)
	}
	var order []string
	before := registration{family: FamilyCloud, defaults: Spec{CloudOnly: true},
		before: func(context.Context, *TestContext) { order = append(order, "before") }}
	got, err = before.register(Spec{ID: "cloud.x", Body: func(context.Context, *TestContext) { order = append(order, "body") }})
	if err != nil || !got.CloudOnly {
		t.Fatalf("cloud registration: %+v, %v; want CloudOnly", got, err)
	}
	got.Body(context.Background(), nil)
	if strings.Join(order, ",") != "before,body" {
		t.Errorf("the registration's before and the body ran as %v, want before then body", order)
	}
}
