package conformance

import (
	"slices"
	"strings"
	"testing"
)

// An argument the contract does not give a tool is the kit's bait when the
// server refuses it (bounds.run-code sends "interpreter" to be refused), so
// it is never reported as an argument "that the contract gives it".
func TestRefusalCauseLeavesOutBait(t *testing.T) {
	bait := `run_code: want a validation error naming interpreter: validating root: unexpected additional properties ["interpreter"]`
	if key, cause, _ := firstCause(bait); strings.HasPrefix(key, refusalPrefix) || strings.Contains(cause, "contract gives it") {
		t.Errorf("the refusal of the kit's bait is a cause %q: %q", key, cause)
	}
	both := `run_code: unexpected tool error: validating root: unexpected additional properties ["interpreter" "language"]`
	key, cause, args := firstCause(both)
	if key != refusalPrefix+"run_code" || !slices.Equal(args, []string{"language"}) || strings.Contains(cause, "interpreter") {
		t.Errorf("firstCause = %q, %q, %v; want run_code's refusal of language alone", key, cause, args)
	}
}
