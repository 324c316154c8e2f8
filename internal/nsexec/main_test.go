package nsexec

import (
	"os"
	"testing"
)

// TestMain lets the test binary be re-run as a sandbox's first process and
// daemon, as the sandboxkit binary is.
func TestMain(m *testing.M) {
	Main()
	os.Exit(m.Run())
}
