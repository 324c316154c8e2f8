package main

import (
	"strings"
	"testing"

	"github.com/sandboxkit/sandboxkit/conformance"
)

// --version and the server's initialize answer name the project version,
// never the placeholder "dev".
func TestVersion(t *testing.T) {
	out, err := run(t, "--version")
	if err != nil || !strings.Contains(out, "sandboxkit version "+conformance.Version) {
		t.Errorf("--version: %q, %v", out, err)
	}
	if v := serveVersion(); !strings.HasPrefix(v, conformance.Version) {
		t.Errorf("serve reports version %q, want %s", v, conformance.Version)
	}
}
