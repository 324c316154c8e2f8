package conformance_test

import (
	"testing"

	"github.com/sandboxkit/sandboxkit/conformance"
)

// TestReferenceServer runs the whole kit against the in-process reference
// server: the reference must pass its own kit.
func TestReferenceServer(t *testing.T) {
	if !conformance.Run(t, conformance.NewConfig()) {
		t.Fatal("the reference server fails the conformance kit")
	}
}
