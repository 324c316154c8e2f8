package conformance

import (
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/sandboxkit/sandboxkit/server"
)

const (
	policiesChildEnv = "SANDBOXKIT_POLICIES_CHILD"
	// httpCapsEnv, when set, gives the test binary's HTTP server
	// (serveHTTPForTests) this cap on its live sessions, X-Forwarded-For as
	// its client address header, and no token.
	httpCapsEnv = "SANDBOXKIT_TEST_HTTP_MAX_SESSIONS"
)

// declaredCap is the session cap of TestDeclaredPoliciesOverHTTP's server.
const declaredCap = 3

// TestDeclaredPoliciesOverHTTP runs the QUOTA specs against the reference
// server in another process over Streamable HTTP, started with a cap of 3
// sessions and X-Forwarded-For as its client address header, and told so
// through Config.Policies only: the kit holds a server URL to the limits
// its user declares, and each spec runs rather than skips.
func TestDeclaredPoliciesOverHTTP(t *testing.T) {
	if os.Getenv(policiesChildEnv) != "" || os.Getenv(variantEnv) != "" || os.Getenv(cloudChildEnv) != "" || os.Getenv(deadlineChildEnv) != "" {
		t.Skip("inside a child run")
	}
	t.Parallel()
	r := runChild(t, "TestDeclaredPoliciesChild", policiesChildEnv+"="+freeLoopbackAddr(t))
	if r.err != nil {
		t.Fatalf("the QUOTA specs failed against the reference server over HTTP at its declared caps: %s", r.explain())
	}
	want := []string{"cleanup.session-sandbox-cap", "cleanup.eviction-spares-busy-session", "cleanup.eviction-from-largest-holder"}
	for _, rep := range r.reports {
		for _, sr := range rep.SpecReports {
			if sr.State.Is(types.SpecStatePassed) {
				want = slices.DeleteFunc(want, func(id string) bool { return slices.Contains(sr.Labels(), id) })
			}
		}
	}
	if len(want) > 0 {
		t.Fatalf("against a server URL with declared caps, %v did not run and pass: %s", want, r.explain())
	}
}

// TestDeclaredPoliciesChild is the run TestDeclaredPoliciesOverHTTP starts.
func TestDeclaredPoliciesChild(t *testing.T) {
	addr := os.Getenv(policiesChildEnv)
	if addr == "" {
		t.Skip("run by TestDeclaredPoliciesOverHTTP")
	}
	cfg := NewConfig()
	targetTestHTTPServer(cfg, addr, httpCapsEnv+"="+strconv.Itoa(declaredCap))
	cfg.Headers = nil // the server takes no token: its clients are told apart by address
	cfg.Policies = Policies{SandboxesPerSession: server.DefaultSandboxesPerSession, MaxSessions: declaredCap, ClientIPHeader: forwardedFor}
	filter := "era-legacy && (cleanup.session-sandbox-cap || cleanup.eviction-spares-busy-session || cleanup.eviction-from-largest-holder)"
	if !RunWith(t, cfg, childOptions(&RunOptions{LabelFilter: filter})) {
		t.Fatal("the reference server over HTTP fails the QUOTA specs at its declared caps")
	}
}
