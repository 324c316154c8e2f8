package summary

import (
	"slices"
	"strings"
	"testing"
)

// An argument the contract does not give a tool is the kit's bait when the
// server refuses it (bounds.run-code sends "interpreter" to be refused), so
// it is never reported as an argument "that the contract gives it".
func TestRefusalCauseLeavesOutBait(t *testing.T) {
	causes := newCauseReader(testCatalog().Tools)
	bait := `run_code: want a validation error naming interpreter: validating root: unexpected additional properties ["interpreter"]`
	if key, cause, _ := causes.firstCause(bait); strings.HasPrefix(key, refusalPrefix) || strings.Contains(cause, "contract gives it") {
		t.Errorf("the refusal of the kit's bait is a cause %q: %q", key, cause)
	}
	both := `run_code: unexpected tool error: validating root: unexpected additional properties ["interpreter" "language"]`
	key, cause, args := causes.firstCause(both)
	if key != refusalPrefix+"run_code" || !slices.Equal(args, []string{"language"}) || strings.Contains(cause, "interpreter") {
		t.Errorf("firstCause = %q, %q, %v; want run_code's refusal of language alone", key, cause, args)
	}
}

// One defect worded by several specs is one cause: no renewal at all, an
// undefined argument accepted by any tool, an unknown provider prefix
// refused without its field.
func TestKnownCausesGroupAcrossSpecs(t *testing.T) {
	causes := newCauseReader(testCatalog().Tools)
	for name, msgs := range map[string][]string{
		"no renewal": {
			"run_command on a sandbox created with timeout 120 must renew the owned sandbox by 120 s before it returns",
			`read_file {"path":"/x"}, which fails, must renew the owned sandbox by 640 s before it returns`,
			"run_command: no set-timeout request for the owned sandbox after the call's work, before the call returned (RENEW-1); journal: POST /x",
		},
		"undefined argument accepted": {
			`create_sandbox unknown team: create_sandbox: want isError true, got a success: {"sandboxId":"a"}`,
			`kill_sandbox unknown zq_x: kill_sandbox: want isError true, got a success: {"success":true}`,
		},
		"unknown provider prefix": {
			"read_file sandbox_id=unconfigured-provider: read_file: the error must name the invalid field",
			"kill_sandbox sandbox_id=unconfigured-provider: kill_sandbox: the error must name the invalid field",
		},
	} {
		first, _, _ := causes.firstCause(msgs[0])
		if !strings.HasPrefix(first, "known:") {
			t.Errorf("%s: %q is no known cause (key %q)", name, msgs[0], first)
		}
		for _, m := range msgs[1:] {
			if key, _, _ := causes.firstCause(m); key != first {
				t.Errorf("%s: %q has key %q, want %q", name, m, key, first)
			}
		}
	}
	// A renewal by the wrong amount is another defect, worded otherwise.
	if key, _, _ := causes.firstCause("run_command must renew the owned sandbox by the policy, 900 s"); strings.HasPrefix(key, "known:") {
		t.Errorf("a wrong renewal amount is grouped with no renewal: %q", key)
	}
}
