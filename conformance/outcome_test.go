package conformance

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/sandboxkit/sandboxkit/conformance/internal/summary"
	"github.com/sandboxkit/sandboxkit/fakeprovider"
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

// dropsFileSandboxID is a server whose file tools ignore the sandbox_id
// they are given and act on the session's default sandbox instead.
func dropsFileSandboxID(breakEnv) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if name, args, ok := toolCall(method, req); ok && strings.HasSuffix(name, "_file") || name == "list_files" {
				if _, named := args["sandbox_id"]; named {
					delete(args, "sandbox_id")
					req.(*mcp.CallToolRequest).Params.Arguments, _ = json.Marshal(args)
				}
			}
			return next(ctx, method, req)
		}
	}
}

// TestOutcomeChild runs one spec against the variant named in the
// environment.
func TestOutcomeChild(t *testing.T) {
	b, filter := &breakage{}, "errors.envd-rpc"
	switch os.Getenv(outcomeEnv) {
	case "":
		t.Skip("run by TestInconclusiveKeepsDefects and TestKitFindsCallsOnTheWrongSandbox")
	case "quiet":
		b.middleware = answersRunCommandItself(false)
	case "leaky":
		b.middleware = answersRunCommandItself(true)
		b.transport = skipsCleanup().transport
	case "wrong-sandbox":
		b.middleware, filter = dropsFileSandboxID, "files.external-no-renew"
	case "control":
		b, filter = nil, "files.external-no-renew"
	}
	runKit(t, NewConfig(), childOptions(&RunOptions{LabelFilter: filter}), testSeams{breakage: b})
}

// A file call that names an external sandbox and writes into the session's
// default instead is a finding of its own, under SESSION-2; the reference
// server's calls are not.
func TestKitFindsCallsOnTheWrongSandbox(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the kit in child processes")
	}
	if os.Getenv(outcomeEnv) != "" {
		t.Skip("inside a child run")
	}
	wrong := outcomeOf(t, "wrong-sandbox", "files.external-no-renew")
	msgs := failureMessages(wrong)
	if !strings.Contains(msgs, "acted on another sandbox than the one named") || !slices.Contains(wrong.Labels(), wrongSandboxRule) {
		t.Errorf("wrong-sandbox: labels %v, messages:\n%s\nwant the call on the wrong sandbox under %s", wrong.Labels(), msgs, wrongSandboxRule)
	}
	t.Logf("wrong-sandbox: %s", msgs)
	if control := outcomeOf(t, "control", "files.external-no-renew"); !control.State.Is(types.SpecStatePassed) {
		t.Errorf("control: the reference server's spec %s: %s", control.State, failureMessages(control))
	}
}

// failureMessages joins a spec's failure messages.
func failureMessages(sr types.SpecReport) string {
	msgs := sr.Failure.Message
	for _, af := range sr.AdditionalFailures {
		msgs += "\n" + af.Failure.Message
	}
	return msgs
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
	msgs := failureMessages(leaky)
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
	return outcomeOf(t, variant, "errors.envd-rpc")
}

// outcomeOf runs the variant's child and returns the concluded report of
// spec id.
func outcomeOf(t *testing.T, variant, id string) types.SpecReport {
	t.Helper()
	r := runChild(t, "TestOutcomeChild", outcomeEnv+"="+variant)
	for _, rep := range r.reports {
		for _, sr := range rep.SpecReports {
			if slices.Contains(sr.Labels(), id) {
				return sr
			}
		}
	}
	t.Fatalf("%s: no report of %s: %s", variant, id, r.out)
	return types.SpecReport{}
}

// Where the journal shows a call's daemon requests went: the named
// sandbox in any spelling, another, or none.
func TestOtherSandbox(t *testing.T) {
	envd := func(id string) fakeprovider.Entry { return fakeprovider.Entry{Envd: true, SandboxID: id} }
	api := fakeprovider.Entry{SandboxID: "iother"}
	for _, c := range []struct {
		named   string
		entries []fakeprovider.Entry
		want    string
	}{
		{"iabc", []fakeprovider.Entry{envd("iabc")}, ""},
		{"e2b:iabc", []fakeprovider.Entry{envd("iabc")}, ""},
		{"iabc-client1", []fakeprovider.Entry{envd("iabc")}, ""},
		{"iabc", []fakeprovider.Entry{envd("ixyz")}, "ixyz"},
		{"iabc", []fakeprovider.Entry{envd("ixyz"), envd("iabc")}, ""},
		{"iabc", []fakeprovider.Entry{api}, ""},
		{"iabc", nil, ""},
	} {
		if got := otherSandbox(c.named, c.entries); got != c.want {
			t.Errorf("otherSandbox(%q) = %q, want %q", c.named, got, c.want)
		}
	}
}

// An inconclusive spec fails no run: alone it makes the verdict
// inconclusive (exit status 2), and a baseline entry for it is named as
// such, neither "now passes" nor "not run".
func TestVerdictOfInconclusive(t *testing.T) {
	spec := func(id string, state types.SpecState, msg string) types.SpecReport {
		return types.SpecReport{LeafNodeType: types.NodeTypeIt, State: state, Failure: types.Failure{Message: msg},
			ContainerHierarchyLabels: [][]string{{string(FamilyErrors)}}, LeafNodeLabels: []string{id, "ERR-1"}}
	}
	undecided := spec("errors.hang", types.SpecStateSkipped, summary.InconclusivePrefix+" (not testable): the fake saw no request")
	passed := spec("errors.drip", types.SpecStatePassed, "")
	failed := spec("errors.reset", types.SpecStateFailed, "boom")
	cfg := NewConfig()
	for _, c := range []struct {
		name  string
		specs []types.SpecReport
		want  Verdict
	}{
		{"passed", []types.SpecReport{passed}, VerdictPass},
		{"inconclusive", []types.SpecReport{passed, undecided}, VerdictInconclusive},
		{"failed", []types.SpecReport{failed, undecided}, VerdictFail},
	} {
		r := ginkgo.Report{SpecReports: c.specs}
		if got := VerdictOf(r, WriteOutcome(io.Discard, r, cfg)); got != c.want {
			t.Errorf("%s: verdict %d, want %d", c.name, got, c.want)
		}
	}
	cfg.ExpectedFailures = []ExpectedFailure{{ID: "errors.hang", Reason: "r"}}
	var out strings.Builder
	r := ginkgo.Report{SpecReports: []types.SpecReport{passed, undecided}}
	WriteOutcome(&out, r, cfg)
	if !strings.Contains(out.String(), "INCONCLUSIVE errors.hang") || strings.Contains(out.String(), "NOT RUN errors.hang") {
		t.Errorf("the baseline does not name the inconclusive entry as such:\n%s", out.String())
	}
}
