package conformance

import (
	"os"
	"testing"
	"time"
)

const deadlineChildEnv = "SANDBOXKIT_DEADLINE_CHILD"

// TestDeadlineSpecsOverHTTP runs the deadline specs against the reference
// server in another process (this test binary, over Streamable HTTP, on the
// fake served on loopback), started with a 5 s provider timeout and told
// so: over real connections a server's cancelled request must end at the
// fake too, which the in-process run cannot show. (HTTP rather than stdio:
// one server process for the specs' many sessions.)
func TestDeadlineSpecsOverHTTP(t *testing.T) {
	if os.Getenv(deadlineChildEnv) != "" || os.Getenv(variantEnv) != "" || os.Getenv(cloudChildEnv) != "" {
		t.Skip("inside a child run")
	}
	t.Parallel()
	if r := runChild(t, "TestDeadlineChild", deadlineChildEnv+"="+freeLoopbackAddr(t)); r.err != nil {
		t.Fatalf("the deadline specs failed against the reference server over HTTP: %s", r.explain())
	}
}

// TestDeadlineChild is the run TestDeadlineSpecsOverHTTP starts.
func TestDeadlineChild(t *testing.T) {
	addr := os.Getenv(deadlineChildEnv)
	if addr == "" {
		t.Skip("run by TestDeadlineSpecsOverHTTP")
	}
	const timeout = 5 * time.Second
	cfg := NewConfig()
	targetTestHTTPServer(cfg, addr, providerTimeoutEnv+"="+timeout.String())
	cfg.ProviderDeadline = timeout
	cfg.RequireAll = true
	if !RunWith(t, cfg, childOptions(&RunOptions{LabelFilter: "errors.hang || errors.drip || errors.oversized"})) {
		t.Fatal("the reference server over HTTP fails the deadline specs")
	}
}
