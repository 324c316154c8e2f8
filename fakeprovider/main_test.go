package fakeprovider_test

import (
	"os"
	"testing"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// TestMain lets the test binary be re-run as a namespace sandbox
// (NamespaceDaemon), as the sandboxkit binary is.
func TestMain(m *testing.M) {
	fakeprovider.RunSandboxRole()
	os.Exit(m.Run())
}
