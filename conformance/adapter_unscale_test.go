package conformance

import "testing"

// A result field mapped with a scale is read back in contract units: set_sandbox_timeout answering timeoutMs 120000 for a
// timeout of 120 s is TIMEOUT-7's {"timeout": 120}, not a failure.
func TestToolMapUnscalesResultFields(t *testing.T) {
	m, err := ParseToolMap([]byte(`{"set_sandbox_timeout": {"name": "setTimeout",
		"args": {"sandbox_id": "sandboxId", "timeout": {"name": "timeoutMs", "scale": 1000}},
		"result": {"fields": {"sandbox_id": "sandboxId", "timeout": {"name": "timeoutMs", "scale": 1000}, "success": "ok"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	r := &Result{arrived: true, Text: `{"ok": true, "sandboxId": "s1", "timeoutMs": 120000}`}
	m["set_sandbox_timeout"].normalise(r)
	if r.Structured["timeout"] != 120.0 || r.Structured["sandbox_id"] != "s1" || r.Structured["success"] != true {
		t.Errorf("normalised result %v, want timeout 120, sandbox_id s1, success true", r.Structured)
	}
	if _, left := r.Structured["timeoutMs"]; left {
		t.Errorf("the server's name is still in the result: %v", r.Structured)
	}
}
