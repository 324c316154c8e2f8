package conformance

import "testing"

func TestRules_Parsed(t *testing.T) {
	rules := Rules()
	if len(rules) < 60 {
		t.Fatalf("parsed only %d rules", len(rules))
	}
	byID := map[string]Rule{}
	for _, r := range rules {
		if r.Section == "" || r.Text == "" {
			t.Errorf("rule %s lacks section or text", r.ID)
		}
		byID[r.ID] = r
	}
	for _, id := range []string{"TOOLS-1", "VAL-7", "LIST-6", "META-5", "TIMEOUT-5", "SESSION-3", "RENEW-2", "BIN-2", "VERIFY-1"} {
		if _, ok := byID[id]; !ok {
			t.Errorf("rule %s missing", id)
		}
	}
	// A continued line is joined onto the rule.
	if r := byID["TOOLS-1"]; len(r.Text) < 200 {
		t.Errorf("TOOLS-1 text not joined: %q", r.Text)
	}
}

// TestEveryResultRules names only rules of the contract.
func TestEveryResultRules(t *testing.T) {
	known := map[string]bool{}
	for _, r := range Rules() {
		known[r.ID] = true
	}
	for _, id := range EveryResultRules() {
		if !known[id] {
			t.Errorf("every-result rule %s is not in the contract", id)
		}
	}
}
