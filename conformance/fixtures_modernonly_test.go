package conformance

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

const modernOnlyEnv = "SANDBOXKIT_MODERN_ONLY_FIXTURE"

// modernOnlyFilter is what a correct modern-only server must pass: the
// lease family, and the protocol specs of the modern era. (A server of
// 2026-07-28 alone fails TOOLS-4's 2025 sessions, and one of four tools
// TOOLS-1's list, by rule: those are true findings, left out here.)
const modernOnlyFilter = "lease || protocol.discover-versions || protocol.tools-list-across-eras"

// TestModernOnlyFixture runs the kit against the correct modern-only
// fixture (internal/fixtures/modernonly: stateless, explicit IDs, leases
// in metadata) in a child process: nothing may fail, the modern runs must
// pass and the legacy runs read "not applicable".
func TestModernOnlyFixture(t *testing.T) {
	if os.Getenv(modernOnlyEnv) != "" {
		t.Skip("inside a child run")
	}
	if testing.Short() {
		t.Skip("builds and runs a fixture server")
	}
	bin := buildFixture(t, "./internal/fixtures/modernonly")
	r := runChild(t, "TestModernOnlyFixtureChild", modernOnlyEnv+"="+bin)
	out := r.out
	if r.err != nil {
		t.Fatalf("the kit fails a correct modern-only server: %s", r.explain())
	}
	if !regexp.MustCompile(`lease\s+6 passed\s+0 failed`).Match(out) {
		t.Errorf("the six lease specs did not all run and pass\n%s", tail(out))
	}
	if !strings.Contains(string(out), "not applicable to 2025 sessions: the server serves only 2026-07-28") {
		t.Errorf("the legacy runs are not reported not applicable\n%s", tail(out))
	}
}

// TestModernOnlyFixtureChild is the run of TestModernOnlyFixture.
func TestModernOnlyFixtureChild(t *testing.T) {
	bin := os.Getenv(modernOnlyEnv)
	if bin == "" {
		t.Skip("run by TestModernOnlyFixture")
	}
	cfg := NewConfig()
	cfg.ServerCommand = []string{bin}
	RunWith(t, cfg, childOptions(&RunOptions{LabelFilter: modernOnlyFilter}))
}
