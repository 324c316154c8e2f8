package conformance

import (
	"encoding/json"
	"testing"
)

// Under profile explicit-ids, kill_sandbox naming the sandbox the kit
// names for calls without sandbox_id makes the kit forget it: the
// leakage.faults spec killed it by ID and then sent every data-plane
// call to the dead sandbox, so each failed not_found and no fault was
// ever hit (a false failure of a correct server).
func TestExplicitIDForgetsKilledSandbox(t *testing.T) {
	cfg := NewConfig()
	cfg.Profile = ProfileExplicitIDs
	s := &Session{tc: &TestContext{Config: cfg}}
	s.setKitDefault("sbx1")
	keep := json.RawMessage(`{"sandbox_id":"other"}`)
	if got := s.explicitID(t.Context(), "kill_sandbox", keep); string(got) != string(keep) {
		t.Fatalf("arguments naming a sandbox changed: %s", got)
	}
	if s.kitDefault != "sbx1" {
		t.Fatalf("killing another sandbox cleared the kit's default")
	}
	s.explicitID(t.Context(), "run_command", json.RawMessage(`{"sandbox_id":"sbx1","command":"true"}`))
	if s.kitDefault != "sbx1" {
		t.Fatalf("a call other than kill_sandbox cleared the kit's default")
	}
	s.explicitID(t.Context(), "kill_sandbox", json.RawMessage(`{"sandbox_id":"sbx1"}`))
	if s.kitDefault != "" {
		t.Errorf("kill_sandbox of the kit's default by ID left it as the default (%q)", s.kitDefault)
	}
}
