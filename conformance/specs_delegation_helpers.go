package conformance

// Helpers shared by the lifecycle families (delegation, default, renewal,
// cleanup): methods on what they act on, the fake's journal, the
// *TestContext (waits, settles, closes) and the *Session (calls that must
// succeed).

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// lcCommand is a command every server runs quickly and successfully.
const lcCommand = "echo ok"

// lcGrace is how long the journal must stay still before a spec concludes
// that the server has stopped calling the provider.
const lcGrace = 200 * time.Millisecond

// seedExternal plants one running external sandbox.
func (tc *TestContext) seedExternal() string {
	return tc.Seed(fakeprovider.SandboxSeed{})
}

// mustRun runs lcCommand with run_command, on sandboxID or (when "") on the
// session's default, and expects a success.
func (s *Session) mustRun(ctx context.Context, sandboxID string) *Result {
	ginkgo.GinkgoHelper()
	tc := s.tc
	args := map[string]any{"command": lcCommand}
	if sandboxID != "" {
		args["sandbox_id"] = sandboxID
	}
	return tc.ExpectSuccess(s.Call(ctx, "run_command", args))
}

// mustGet calls get_sandbox (on the default when id is "") and expects a
// success naming the sandbox.
func (s *Session) mustGet(ctx context.Context, id string) *Result {
	ginkgo.GinkgoHelper()
	tc := s.tc
	args := map[string]any{}
	if id != "" {
		args["sandbox_id"] = id
	}
	return tc.ExpectSuccess(s.Call(ctx, "get_sandbox", args))
}

// Ops lists the operations of entries, in order.
func (entries journal) Ops() []string {
	ops := make([]string, 0, len(entries))
	for _, e := range entries {
		op := e.Op
		if op == "" {
			op = "<unknown route> " + e.Method + " " + e.Path
		}
		ops = append(ops, op)
	}
	return ops
}

// Control keeps the control-plane entries.
func (entries journal) Control() journal {
	var out []fakeprovider.Entry
	for _, e := range entries {
		if !e.Envd {
			out = append(out, e)
		}
	}
	return out
}

// WithOp keeps the entries of one operation.
func (entries journal) WithOp(op string) journal {
	var out []fakeprovider.Entry
	for _, e := range entries {
		if e.Op == op {
			out = append(out, e)
		}
	}
	return out
}

// ExpectOps asserts that entries are exactly the operations want, in order.
// WithoutHandleReads drops, in a modern run, the reads of sandbox id's
// metadata: a 2026-07-28 request carries no session, so a server (or the
// replica a request reaches) may read the sandbox's metadata to find its
// lease and principal before acting on it (HANDLE-1, LEASE-4). In a legacy
// run it returns entries unchanged.
func (entries journal) WithoutHandleReads(tc *TestContext, id string) journal {
	if tc.Era() != EraModern {
		return entries
	}
	var kept journal
	for _, e := range entries {
		if e.Op == sandbox.OpGetSandbox && fakeprovider.SameSandbox(e.SandboxID, id) {
			continue
		}
		kept = append(kept, e)
	}
	return kept
}

func (entries journal) ExpectOps(what string, want ...string) {
	ginkgo.GinkgoHelper()
	if want == nil {
		want = []string{}
	}
	gomega.Expect(entries.Ops()).To(gomega.Equal(want), "%s: the provider requests made", what)
}

// ExpectNoEnvd asserts that no entry reached a sandbox's daemon (SDK-3)
// nor used a sandbox's domain as its host.
func (entries journal) ExpectNoEnvd(tc *TestContext, what string, ids ...string) {
	ginkgo.GinkgoHelper()
	for _, e := range entries {
		gomega.Expect(e.Envd).To(gomega.BeFalse(), "%s: the server called the sandbox's daemon (%s)", what, e.Op)
		for _, id := range ids {
			if dom, ok := tc.Fake.Domain(id); ok && dom != "" {
				gomega.Expect(strings.Contains(strings.ToLower(e.Host), strings.ToLower(dom))).To(gomega.BeFalse(),
					"%s: a lifecycle call was routed through the sandbox domain, not the API URL (%s)", what, e.Op)
			}
		}
	}
}

// timeoutBody returns N of a {"timeout": N} request body, and fails the
// spec when the body is anything else.
func timeoutBody(e fakeprovider.Entry) int64 {
	ginkgo.GinkgoHelper()
	var body map[string]any
	gomega.Expect(json.Unmarshal(e.Body, &body)).To(gomega.Succeed(), "%s: the body is not a JSON object: %q", e.Op, truncate(string(e.Body), 200))
	keys := make([]string, 0, len(body))
	for k := range body {
		keys = append(keys, k)
	}
	gomega.Expect(keys).To(gomega.ConsistOf("timeout"), `%s: the body must be exactly {"timeout": N}`, e.Op)
	n, ok := body["timeout"].(float64)
	gomega.Expect(ok).To(gomega.BeTrue(), "%s: timeout is not a number", e.Op)
	gomega.Expect(n).To(gomega.Equal(float64(int64(n))), "%s: timeout is not whole seconds", e.Op)
	return int64(n)
}

// Renewals returns N of every OpSetTimeout for id in entries, in order.
func (entries journal) Renewals(id string) []int64 {
	ginkgo.GinkgoHelper()
	var out []int64
	for _, e := range entries {
		if e.Op == sandbox.OpSetTimeout && fakeprovider.SameSandbox(e.SandboxID, id) {
			out = append(out, timeoutBody(e))
		}
	}
	return out
}

// expectEndAt asserts that the provider's endAt of id is want, to the second.
func (tc *TestContext) expectEndAt(id string, want time.Time, why string) {
	ginkgo.GinkgoHelper()
	rec, ok := tc.Fake.Sandbox(id)
	gomega.Expect(ok).To(gomega.BeTrue(), "%s: sandbox %s is gone", why, id)
	gomega.Expect(rec.EndAt).To(gomega.BeTemporally("~", want, time.Second), "%s: the sandbox's end time", why)
}

// live reports whether the provider still has sandbox id.
func (tc *TestContext) live(id string) bool {
	_, ok := tc.Fake.Sandbox(id)
	return ok
}

// waitGone waits, within the settle timeout, until none of ids is live.
func (tc *TestContext) waitGone(ctx context.Context, why string, ids ...string) {
	ginkgo.GinkgoHelper()
	gone := tc.WaitFor(ctx, tc.Config.SettleTimeout, func() bool {
		for _, id := range ids {
			if tc.live(id) {
				return false
			}
		}
		return true
	})
	if !gone {
		var left []string
		for _, id := range ids {
			if tc.live(id) {
				left = append(left, id)
			}
		}
		var reqs []string
		for _, id := range left {
			for _, e := range tc.journalFor(id) {
				if !e.Envd {
					reqs = append(reqs, fmt.Sprintf("%s %s -> %d", e.Op, id, e.Status))
				}
			}
		}
		ginkgo.Fail(fmt.Sprintf("%s: sandboxes %s still exist %s later; their control-plane requests: %s",
			why, strings.Join(left, ", "), tc.Config.SettleTimeout, strings.Join(reqs, "; ")))
	}
}

// settle waits until the journal has stayed unchanged for lcGrace plus two
// of the spec's typical no-op round trips (at most the settle timeout), so
// that a late call would have arrived however busy the machine.
func (tc *TestContext) settle(ctx context.Context) {
	quiet := tc.allowQuiet(ctx, lcGrace, 2)
	last := tc.Fake.Journal().Len()
	still := time.Now()
	tc.WaitFor(ctx, tc.Config.SettleTimeout, func() bool {
		n := tc.Fake.Journal().Len()
		if n != last {
			last, still = n, time.Now()
			return false
		}
		return time.Since(still) >= quiet
	})
}

// closeSession closes a session (for HTTP this sends DELETE) and waits until
// the provider no longer has the sandboxes it owned and the server has
// stopped calling the provider.
func (tc *TestContext) closeSession(ctx context.Context, s *Session, owned ...string) {
	ginkgo.GinkgoHelper()
	gomega.Expect(s.Close(ctx)).To(gomega.Succeed(), "close the session")
	tc.waitGone(ctx, "after the session closed", owned...)
	tc.settle(ctx)
}

// kills counts the OpKillSandbox requests for id.
func (tc *TestContext) kills(id string) int {
	return len(tc.journalFor(id).WithOp(sandbox.OpKillSandbox))
}

// expectUntouched asserts that an external sandbox survived a
// session's close and that the server never renewed or killed it.
func (tc *TestContext) expectUntouched(id, why string) {
	ginkgo.GinkgoHelper()
	gomega.Expect(tc.live(id)).To(gomega.BeTrue(), "%s: sandbox %s was destroyed", why, id)
	gomega.Expect(tc.kills(id)).To(gomega.BeZero(), "%s: the server killed sandbox %s", why, id)
}

// knownOp reports whether op is in the route table (control plane or envd).
func knownOp(op string) bool {
	return contains(sandbox.ControlPlaneOps(), op) || contains(sandbox.EnvdOps(), op)
}

// lcListParams are the query parameters of the platform's list endpoint
// that LIST-6 allows.
var lcListParams = []string{"state", "limit", "nextToken", "metadata"}

// expectConnectionsReleased asserts, for a server in another process,
// that the connections to the provider fall back to at most baseline soon
// after a by-ID call (GET-6, TIMEOUT-6).
func (tc *TestContext) expectConnectionsReleased(ctx context.Context, baseline int, what string) {
	ginkgo.GinkgoHelper()
	ok := tc.WaitFor(ctx, 2*time.Second, func() bool { return tc.OpenConnections() <= baseline })
	gomega.Expect(ok).To(gomega.BeTrue(), "%s left %d connection(s) to the provider open (%d before the call)",
		what, tc.OpenConnections(), baseline)
}

// keysOf returns the keys of a JSON object.
func keysOf(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
