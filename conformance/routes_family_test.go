package conformance

import (
	"os"
	"os/exec"
	"testing"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

const routesEnv = "SANDBOXKIT_FAKE_ROUTES"

// TestReferenceServerRouteFamilies runs the whole kit against the reference
// server once per create/connect route family, each against a fake that
// refuses the other family (v1 only: the reference server's default, as the
// Python SDK; v2 only: the server configured with routes "v2", as the JS SDK
// 2.x calls them). Each run is a child process: Ginkgo runs one suite per
// process.
func TestReferenceServerRouteFamilies(t *testing.T) {
	if os.Getenv(routesEnv) != "" {
		t.Skip("inside a child run")
	}
	for _, family := range []string{"v1", "v2"} {
		t.Run(family, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestRouteFamilyChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), routesEnv+"="+family)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("the reference server fails the kit on the %s routes only: %v\n%s", family, err, tail(out))
			}
		})
	}
}

// TestRouteFamilyChild runs the kit with the fake restricted to the family
// named in the environment.
func TestRouteFamilyChild(t *testing.T) {
	var seams testSeams
	switch os.Getenv(routesEnv) {
	case "v1":
		seams.fakeRoutes = fakeprovider.V1Routes
	case "v2":
		seams.fakeRoutes = fakeprovider.V2Routes
	default:
		t.Skip("run by TestReferenceServerRouteFamilies")
	}
	if !runKit(t, NewConfig(), nil, seams) {
		t.Fatal("the reference server fails the conformance kit")
	}
}
