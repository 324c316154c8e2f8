package conformance

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/sandboxkit/sandboxkit/conformance/internal/summary"
)

const outcomeEnv = "SANDBOXKIT_OUTCOME_VARIANT"

// answersRunCommandItself is a server whose run_command never reaches the
// provider: it answers a tool error of its own, which, with url, quotes a
// provider URL (an ERR-3 defect whatever the fake served).
func answersRunCommandItself(url bool) func(breakEnv) mcp.Middleware {
	text := `{"error":{"category":"unavailable","message":"the sandbox is unreachable","recovery":"retry later"}}`
	if url {
		text = `{"error":{"category":"unavailable","message":"fetch https://49983-isbx.e2b.test/process.Process/Start failed","recovery":"retry later"}}`
	}
	return func(breakEnv) mcp.Middleware {
		return func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if name, _, ok := toolCall(method, req); ok && name == "run_command" {
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
				}
				return next(ctx, method, req)
			}
		}
	}
}

// TestOutcomeChild runs errors.envd-rpc against the variant named in the
// environment.
func TestOutcomeChild(t *testing.T) {
	b := &breakage{}
	switch os.Getenv(outcomeEnv) {
	case "":
		t.Skip("run by TestInconclusiveKeepsDefects")
	case "quiet":
		b.middleware = answersRunCommandItself(false)
	case "leaky":
		b.middleware = answersRunCommandItself(true)
		b.transport = skipsCleanup().transport
	}
	runKit(t, NewConfig(), childOptions(&RunOptions{LabelFilter: "errors.envd-rpc"}), testSeams{breakage: b})
}

// A spec whose faults were never exercised is inconclusive, not failed;
// when it also met a provider URL in a tool error and left sandboxes
// running, it fails with those defects, under their rules (ERR-3,
// SESSION-1), and the inconclusive label replaces neither.
func TestInconclusiveKeepsDefects(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the kit in child processes")
	}
	if os.Getenv(outcomeEnv) != "" {
		t.Skip("inside a child run")
	}
	quiet := envdRPCOutcome(t, "quiet")
	if !summary.IsInconclusive(quiet) || summary.InconclusiveKind(quiet) != summary.InconclusiveNotExercised {
		t.Errorf("quiet: state %s, message %q; want INCONCLUSIVE (fault never exercised)", quiet.State, quiet.Failure.Message)
	}
	leaky := envdRPCOutcome(t, "leaky")
	msgs := leaky.Failure.Message
	for _, af := range leaky.AdditionalFailures {
		msgs += "\n" + af.Failure.Message
	}
	if !leaky.State.Is(types.SpecStateFailed) || !strings.Contains(msgs, `defect`) || !strings.Contains(msgs, `holds "https://"`) ||
		!strings.Contains(msgs, leakPrefix) || !strings.Contains(msgs, "INCONCLUSIVE (fault never exercised)") {
		t.Errorf("leaky: state %s, messages:\n%s\nwant a failure with the URL, the leak, and why the rest is not judged", leaky.State, msgs)
	}
	t.Logf("quiet: %s\nleaky: %s", quiet.Failure.Message, msgs)
	for _, rule := range []string{"ERR-3", "SESSION-1"} {
		if !slices.Contains(leaky.Labels(), rule) {
			t.Errorf("leaky: labels %v lack %s", leaky.Labels(), rule)
		}
	}
}

// envdRPCOutcome runs the variant's child and returns errors.envd-rpc's
// concluded report.
func envdRPCOutcome(t *testing.T, variant string) types.SpecReport {
	t.Helper()
	r := runChild(t, "TestOutcomeChild", outcomeEnv+"="+variant)
	for _, rep := range r.reports {
		for _, sr := range rep.SpecReports {
			if slices.Contains(sr.Labels(), "errors.envd-rpc") {
				return sr
			}
		}
	}
	t.Fatalf("%s: no report of errors.envd-rpc: %s", variant, r.out)
	return types.SpecReport{}
}
