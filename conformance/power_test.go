package conformance

import (
	"os"
	"slices"
	"strings"
	"testing"
)

const variantEnv = "SANDBOXKIT_BROKEN_VARIANT"

// TestKitCatchesBrokenServers runs the kit, one family at a time (its
// legacy era, or the variant's focused specs: variantFilter), against each
// deliberately broken variant of the reference server, each in a child
// process (Ginkgo runs one suite per process), and fails unless a spec of
// the variant's family fails. TestReferenceServer is the control: the
// unbroken server passes every family.
func TestKitCatchesBrokenServers(t *testing.T) {
	if os.Getenv(variantEnv) != "" {
		t.Skip("inside a child run")
	}
	for _, v := range brokenVariants() {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			r := runChild(t, "TestBrokenVariantChild", variantEnv+"="+v.name)
			if r.err == nil {
				t.Fatalf("the kit did not catch %q (%s): every spec of %s passed", v.name, v.defect, variantFilter(v))
			}
			var ids []string
			for _, id := range failedSpecs(summaryOf(string(r.out))) {
				if strings.HasPrefix(id, string(v.family)+".") {
					ids = append(ids, id)
				}
			}
			if len(ids) == 0 {
				t.Fatalf("the child run failed, but no %s spec failed (a crash or a setup failure?): %s", v.family, r.explain())
			}
			for _, want := range focused(v.name) {
				if !slices.Contains(ids, want) {
					t.Errorf("%s (%s) was caught by %s, but not by %s: %s", v.name, v.defect, strings.Join(ids, ", "), want, r.explain())
				}
			}
			t.Logf("%s caught by %s", v.name, strings.Join(ids, ", "))
		})
	}
}

// TestBrokenVariantChild runs one family of the kit in the legacy era (or
// the variant's focused specs: variantFilter) against the variant named in
// the environment; the parent expects it to fail.
func TestBrokenVariantChild(t *testing.T) {
	name := os.Getenv(variantEnv)
	if name == "" {
		t.Skip("run by TestKitCatchesBrokenServers")
	}
	for _, v := range brokenVariants() {
		if v.name != name {
			continue
		}
		runKit(t, variantConfig(name), childOptions(&RunOptions{LabelFilter: variantFilter(v)}), testSeams{breakage: v.make()})
		return
	}
	if name == sweepCorrect {
		runKit(t, variantConfig(name), childOptions(&RunOptions{LabelFilter: stdioHarnessSpecs}), testSeams{})
		return
	}
	t.Fatalf("unknown variant %q", name)
}

// variantFilter is what a variant's child run runs: its focused specs
// (run IDs, so each names its era), or else its family in the legacy era.
// A defect of a variant without focused specs is the same in both eras (a
// middleware or transport defect below the era, or one of session close,
// which only the legacy era has), so the family's modern runs would repeat
// the legacy runs' proof at twice the cost. The lease and handle families
// run only in the modern era: a variant of theirs runs the whole family.
func variantFilter(v brokenVariant) string {
	if ids := focused(v.name); len(ids) > 0 {
		return strings.Join(ids, " || ")
	}
	if leaseFamily(v.family) {
		return string(v.family)
	}
	return "(" + string(v.family) + ") && era-" + string(EraLegacy)
}

func tail(out []byte) string {
	const n = 3000
	if len(out) > n {
		return "..." + string(out[len(out)-n:])
	}
	return string(out)
}

// focused returns the specs a variant's child run runs, each of which
// must fail: the kit's own list, then the era variants'.
func focused(name string) []string {
	if ids, ok := focusedSpecs[name]; ok {
		return ids
	}
	if ids, ok := eraFocusedSpecs[name]; ok {
		return ids
	}
	if ids, ok := wireFocusedSpecs[name]; ok {
		return ids
	}
	if ids, ok := ownersFocusedSpecs[name]; ok {
		return ids
	}
	if ids, ok := bindFocusedSpecs[name]; ok {
		return ids
	}
	return robustnessFocusedSpecs[name]
}
