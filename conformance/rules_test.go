package conformance

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

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

// TestContract_MatchesSharedSpec keeps the embedded copy identical to the
// project's shared contract when that folder is present (it is beside the
// repository on developer machines and in CI).
func TestContract_MatchesSharedSpec(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	shared := filepath.Join(filepath.Dir(file), "..", "..", "shared", "spec", "tools.md")
	data, err := os.ReadFile(shared)
	if os.IsNotExist(err) {
		t.Skipf("shared contract not present at %s", shared)
	}
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != Contract() {
		t.Fatalf("conformance/contract/tools.md differs from %s: copy the shared contract and update the specs", shared)
	}
}
