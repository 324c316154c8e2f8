package conformance_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxkit/sandboxkit/conformance"
	"github.com/sandboxkit/sandboxkit/evidence"
)

// TestReferenceServer runs the whole kit against the in-process reference
// server: the reference must pass its own kit. The run writes a loopback
// evidence bundle, which must verify as loopback evidence and never as
// cloud evidence.
func TestReferenceServer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "evidence")
	if !conformance.RunWith(t, conformance.NewConfig(), &conformance.RunOptions{EvidenceDir: dir}) {
		t.Fatal("the reference server fails the conformance kit")
	}
	if err := evidence.Verify(dir, nil); err != nil {
		t.Fatalf("the reference server's loopback evidence does not verify: %v", err)
	}
	err := evidence.Verify(dir, &evidence.VerifyOptions{Cloud: true})
	if err == nil || !strings.Contains(err.Error(), "never verifies as cloud evidence") {
		t.Fatalf("loopback evidence must fail cloud verification, got %v", err)
	}
}
