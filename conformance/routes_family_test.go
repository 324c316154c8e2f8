package conformance

import (
	"os"
	"strings"
	"testing"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

const routesEnv = "SANDBOXKIT_FAKE_ROUTES"

// routeFamilyFilter is what a route-family run runs: every spec in the
// legacy era, and the modern era's lease and handle specs. The route family
// is the provider configuration of the server's platform
// (sandbox.ProviderConfig.Routes), below the MCP era: a modern request
// creates and connects through the same platform calls as a legacy one, so
// the legacy runs reach every create and connect path the kit drives (the
// fault matrix and the deadline specs on both included), and the lease and
// handle specs, which run only in the modern era, show a modern request
// creating, connecting to and renewing sandboxes on that family.
const routeFamilyFilter = "era-legacy || ((lease || handles) && era-modern)"

// TestReferenceServerRouteFamilies runs the kit against the reference
// server once per create/connect route family, each against a fake that
// refuses the other family (v1 only: the reference server's default, as the
// Python SDK; v2 only: the server configured with routes "v2", as the JS SDK
// 2.x calls them). Each run is a child process (Ginkgo runs one suite per
// process), and they run one after the other: two kits under the race
// detector at once would double the load of every spec's calls, the
// deadline specs' included. The test is parallel with the other parallel
// tests (smaller kits: cloud mode, the deadline specs over HTTP), which
// otherwise would wait for it. A failure names the family it happened on and
// each failed spec with its message.
//
// Each run is routeFamilyFilter, not both eras of every spec:
// TestReferenceServer runs the whole kit in both eras.
func TestReferenceServerRouteFamilies(t *testing.T) {
	if os.Getenv(routesEnv) != "" {
		t.Skip("inside a child run")
	}
	// Beside the cloud and HTTP deadline tests (go test runs at most
	// GOMAXPROCS parallel tests at once), not after them; never beside
	// TestReferenceServer, which is not parallel.
	t.Parallel()
	var failed []string
	for _, family := range []string{"v1", "v2"} {
		t.Run(family, func(t *testing.T) {
			r := runChild(t, "TestRouteFamilyChild", routesEnv+"="+family)
			if r.err != nil {
				failed = append(failed, family)
				t.Fatalf("against a fake that serves only the %s create/connect routes, the reference server fails the kit: %s", family, r.explain())
			}
		})
	}
	if len(failed) == 2 {
		t.Errorf("both route families fail (%s): look first at what their failures share, not at the routes", strings.Join(failed, ", "))
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
	if !runKit(t, NewConfig(), childOptions(&RunOptions{LabelFilter: routeFamilyFilter}), seams) {
		t.Fatal("the reference server fails the conformance kit")
	}
}
