package fakeprovider_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// TestLegacyIDsNameTheirSandbox checks that the "<sandboxID>-<clientID>"
// form e2b 1.x hands out finds the same sandbox as the short ID: in the
// journal, in faults, in Sandbox, and on the wire.
func TestLegacyIDsNameTheirSandbox(t *testing.T) {
	f := newFixture(t, nil)
	sb := f.create(map[string]any{"templateID": "base", "timeout": 60})
	id := sb["sandboxID"].(string)
	legacy := id + "-" + sb["clientID"].(string)
	if got := fakeprovider.CanonicalSandboxID(legacy); got != id {
		t.Fatalf("CanonicalSandboxID(%q) = %q, want %q", legacy, got, id)
	}
	if !fakeprovider.SameSandbox(legacy, id) || fakeprovider.SameSandbox(legacy, id+"x") {
		t.Fatalf("SameSandbox does not tell %q apart correctly", legacy)
	}
	if got := fakeprovider.CanonicalSandboxID("not-a-valid-id"); got != "not-a-valid-id" {
		t.Fatalf("an ID the platform refuses changed to %q", got)
	}
	if _, ok := f.p.Sandbox(legacy); !ok {
		t.Fatalf("Sandbox(%q) did not find the sandbox", legacy)
	}
	h := f.p.InjectFault(fakeprovider.Fault{SandboxID: legacy, Status: http.StatusTeapot, Times: 1})
	defer h.Release()
	f.p.Journal().Reset()
	if res := f.do("GET", "/sandboxes/"+legacy, nil); res.status != http.StatusTeapot {
		t.Fatalf("GET with the legacy ID: status %d, want the fault's 418", res.status)
	}
	if res := f.do("GET", "/sandboxes/"+legacy, nil); res.status != http.StatusOK {
		t.Fatalf("GET with the legacy ID: status %d, want 200", res.status)
	}
	if n := len(f.p.Journal().ForSandbox(legacy)); n != 2 {
		t.Fatalf("ForSandbox(legacy) = %d entries, want 2", n)
	}
	if n := len(f.p.Journal().ForSandbox(id)); n != 2 {
		t.Fatalf("ForSandbox(short) = %d entries, want 2", n)
	}
}

// TestLegacyIDsMoveTheirSandbox: the test-side mutators take the legacy
// form too (a kit spec sets the end time of the sandbox a 1.x server
// named <id>-<clientID>; it panicked with "no live sandbox").
func TestLegacyIDsMoveTheirSandbox(t *testing.T) {
	f := newFixture(t, nil)
	sb := f.create(map[string]any{"templateID": "base", "timeout": 60})
	id := sb["sandboxID"].(string)
	legacy := id + "-" + sb["clientID"].(string)
	endAt := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	f.p.SetEndAt(legacy, endAt)
	f.p.SetState(legacy, fakeprovider.StatePaused)
	rec, _ := f.p.Sandbox(id)
	if rec.State != fakeprovider.StatePaused {
		t.Errorf("SetState(legacy): state %s, want paused", rec.State)
	}
}
