package conformance

import (
	"slices"
	"testing"
)

// A bounds spec that rejects a tool's missing or mistyped arguments names
// the rule that gives the tool those arguments: VAL-3..7 say how a
// rejection looks, not which arguments are required (bounds.read-file and
// bounds.write-file named no such rule).
func TestBoundsSpecsNameTheirSignatureRule(t *testing.T) {
	signature := map[string]string{
		"bounds.list-sandboxes": "LIST-3", "bounds.create-sandbox": "CREATE-1", "bounds.set-sandbox-timeout": "TIMEOUT-1",
		"bounds.run-command": "EXEC-1", "bounds.run-code": "EXEC-2", "bounds.read-file": "FILE-2", "bounds.write-file": "FILE-1",
		"bounds.list-files": "FILE-3", "bounds.start-background-command": "BG-1", "bounds.get-background-command": "BG-2",
		"bounds.kill-background-command": "BG-3", "bounds.upload-file": "BIN-1", "bounds.download-file": "BIN-2",
	}
	seen := 0
	for _, s := range Specs() {
		rule, ok := signature[s.ID]
		if !ok {
			continue
		}
		seen++
		if !slices.Contains(s.Rules, rule) {
			t.Errorf("%s rejects missing or mistyped arguments that %s defines, but its rules %v do not name it", s.ID, rule, s.Rules)
		}
	}
	if seen != len(signature) {
		t.Errorf("found %d of the %d bounds specs", seen, len(signature))
	}
}
