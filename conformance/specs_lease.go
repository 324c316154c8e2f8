package conformance

import (
	"context"
	"encoding/json"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// leaseSpecs are the rules that replace the session rules where there is
// no session (section 13): in the modern era, and for a server of a
// sessionless profile. Each reads the fake's clock and journal.
func leaseSpecs() []Spec {
	return []Spec{
		{ID: "lease.modern-no-default", Rules: []string{"MODERN-1"}, Tools: []string{"create_sandbox", "run_command"}, Body: specModernNoDefault,
			Title: "answers a modern call without sandbox_id with no_default_sandbox, whatever earlier requests created, and creates nothing"},
		{ID: "lease.end-at-create", Rules: []string{"LEASE-1"}, Tools: []string{"create_sandbox"}, Body: specLeaseAtCreate,
			Title: "creates every sandbox with an end at most now + its policy: the timeout given, or the 300 s default"},
		{ID: "lease.renewal-bounded", Rules: []string{"LEASE-2"}, Tools: []string{"create_sandbox", "run_command", "kill_sandbox"}, Body: specLeaseRenewalBounded,
			Title: "never sets a lease's end beyond now + policy after a call, lets it expire a policy after the last call, and kill_sandbox ends it at once"},
		{ID: "lease.outlives-connection", Rules: []string{"LEASE-3"}, Tools: []string{"create_sandbox", "get_sandbox"}, Body: specLeaseOutlivesConnection,
			Title: "keeps a modern request's sandbox alive after the request and its connection end, reachable from a new connection"},
		{ID: "lease.policy-travels", Rules: []string{"LEASE-4", "LEASE-2"}, Tools: []string{"create_sandbox", "run_command"}, Body: specLeasePolicyTravels,
			Title: "renews a sandbox by the policy it was created with from another connection (another process of a stdio server)"},
		{ID: "lease.quiet-after-requests", Rules: []string{"LEASE-2", "LEASE-3"}, Tools: []string{"create_sandbox", "run_command", "kill_sandbox"}, Body: specLeaseQuietAfterRequests,
			Title: "holds nothing after many requests: the provider hears nothing more from the server once they are answered"},
	}
}

// leasePolicy is the timeout the lease specs create their sandboxes with:
// shorter than the default, so that a server that ignores it is seen.
const leasePolicy = 120 * time.Second

// expectEndWithin fails unless sandbox id's end at the fake is at most
// now + policy + skew (LEASE-1, LEASE-2).
func expectEndWithin(tc *TestContext, id string, policy time.Duration, when string) time.Time {
	ginkgo.GinkgoHelper()
	rec, ok := tc.Fake.Sandbox(id)
	gomega.Expect(ok).To(gomega.BeTrue(), "sandbox %s is not alive %s", id, when)
	limit := tc.Clock.Now().Add(policy + leaseSkew)
	gomega.Expect(rec.EndAt).To(gomega.BeTemporally("<=", limit),
		"%s, sandbox %s ends at %s, beyond now + its policy %s + %s of skew (%s)", when, id, rec.EndAt.UTC().Format(time.RFC3339), policy, leaseSkew, limit.UTC().Format(time.RFC3339))
	return rec.EndAt
}

func createLeased(ctx context.Context, s *Session, policy time.Duration) string {
	ginkgo.GinkgoHelper()
	args := map[string]any{}
	if policy != defaultLeasePolicy {
		args["timeout"] = int(policy / time.Second)
	}
	r := s.Call(ctx, "create_sandbox", args)
	s.tc.ExpectSuccess(r)
	id := r.String("sandbox_id")
	gomega.Expect(id).NotTo(gomega.BeEmpty(), "create_sandbox gave no sandbox_id")
	return id
}

func specModernNoDefault(ctx context.Context, tc *TestContext) {
	if tc.Era() != EraModern {
		ginkgo.Skip(NotApplicablePrefix + ": MODERN-1 is a rule of " + ModernProtocolVersion + " requests")
	}
	s := tc.Connect(ctx)
	createLeased(ctx, s, defaultLeasePolicy)
	live := len(tc.Fake.LiveSandboxes())
	// MODERN-1: no default, whatever earlier requests on the same
	// connection did; nothing is created implicitly.
	r := s.bareCall(ctx, "run_command", map[string]any{"command": "true"})
	gomega.Expect(r.IsError).To(gomega.BeTrue(), "run_command without sandbox_id succeeded in a modern request: it used a default (%s)", truncate(r.JSON, 300))
	gomega.Expect(r.Category()).To(gomega.Equal("invalid_argument"), "category of run_command without sandbox_id")
	gomega.Expect(r.ErrorObject()["code"]).To(gomega.Equal("no_default_sandbox"), "code of run_command without sandbox_id")
	gomega.Expect(tc.Fake.LiveSandboxes()).To(gomega.HaveLen(live), "run_command without sandbox_id created a sandbox")
}

func specLeaseAtCreate(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	for _, policy := range []time.Duration{leasePolicy, defaultLeasePolicy} {
		id := createLeased(ctx, s, policy)
		expectEndWithin(tc, id, policy, "at create")
	}
}

func specLeaseRenewalBounded(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	id := createLeased(ctx, s, leasePolicy)
	for i := 0; i < 3; i++ {
		tc.Clock.Advance(leasePolicy / 4)
		tc.ExpectSuccess(s.Call(ctx, "run_command", map[string]any{"command": "true", "sandbox_id": id}))
		expectEndWithin(tc, id, leasePolicy, "after a run_command")
	}
	// LEASE-2: nothing renews it in the background; a policy (plus
	// skew) after the last call it is gone.
	tc.Clock.Advance(leasePolicy + leaseSkew)
	_, alive := tc.Fake.Sandbox(id)
	gomega.Expect(alive).To(gomega.BeFalse(), "sandbox %s is alive %s after its last call, beyond its policy %s", id, leasePolicy+leaseSkew, leasePolicy)
	other := createLeased(ctx, s, leasePolicy)
	tc.ExpectSuccess(s.Call(ctx, "kill_sandbox", map[string]any{"sandbox_id": other}))
	_, alive = tc.Fake.Sandbox(other)
	gomega.Expect(alive).To(gomega.BeFalse(), "kill_sandbox answered, and sandbox %s is still alive", other)
}

func specLeaseOutlivesConnection(ctx context.Context, tc *TestContext) {
	if tc.Era() != EraModern {
		ginkgo.Skip(NotApplicablePrefix + ": LEASE-3 is a rule of " + ModernProtocolVersion + " requests; a sessionless legacy server may end its sandboxes with the connection")
	}
	s := tc.Connect(ctx)
	id := createLeased(ctx, s, leasePolicy)
	// LEASE-3: not the end of the request...
	_, alive := tc.Fake.Sandbox(id)
	gomega.Expect(alive).To(gomega.BeTrue(), "sandbox %s ended with the request that created it", id)
	gomega.Expect(s.Close(ctx)).To(gomega.Succeed())
	// ...nor of the connection (stdio EOF).
	_, alive = tc.Fake.Sandbox(id)
	gomega.Expect(alive).To(gomega.BeTrue(), "sandbox %s ended with its connection", id)
	r := tc.Connect(ctx).Call(ctx, "get_sandbox", map[string]any{"sandbox_id": id})
	tc.ExpectSuccess(r)
}

func specLeasePolicyTravels(ctx context.Context, tc *TestContext) {
	id := createLeased(ctx, tc.Connect(ctx), leasePolicy)
	tc.Clock.Advance(leasePolicy / 2)
	tc.Fake.Journal().Reset()
	tc.ExpectSuccess(tc.Connect(ctx).Call(ctx, "run_command", map[string]any{"command": "true", "sandbox_id": id}))
	end := expectEndWithin(tc, id, leasePolicy, "after a run_command from another connection")
	// LEASE-4: the other connection renews by the create-time policy,
	// not by a default of its own.
	if tc.Fake.Journal().Count(sandbox.OpSetTimeout) > 0 {
		gomega.Expect(end).To(gomega.BeTemporally(">=", tc.Clock.Now().Add(leasePolicy-leaseSkew)),
			"another connection renewed sandbox %s to %s, short of its policy %s", id, end.UTC().Format(time.RFC3339), leasePolicy)
	}
}

// quietRequests is how many modern requests lease.quiet-after-requests
// makes before it watches the provider journal settle.
const quietRequests = 8

func specLeaseQuietAfterRequests(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	var slowest time.Duration
	created := map[string]bool{}
	for i := 0; i < quietRequests; i++ {
		start := time.Now()
		id := createLeased(ctx, s, leasePolicy)
		created[fakeprovider.CanonicalSandboxID(id)] = true
		tc.ExpectSuccess(s.Call(ctx, "run_command", map[string]any{"command": "true", "sandbox_id": id}))
		tc.ExpectSuccess(s.Call(ctx, "kill_sandbox", map[string]any{"sandbox_id": id}))
		slowest = max(slowest, time.Since(start))
	}
	// The settle window is measured, not fixed: ten times the
	// slowest round of three calls in this run. A server that keeps
	// per-request state renews or polls after the requests end.
	n := len(tc.Fake.Journal().Entries())
	window := 10 * slowest
	time.Sleep(window)
	after := tc.Fake.Journal().Entries()
	var extra []string
	for _, e := range after[n:] {
		if !causedByTheseRequests(e, created) {
			continue
		}
		extra = append(extra, e.Op)
	}
	gomega.Expect(extra).To(gomega.BeEmpty(), "the server called the provider %d times in the %s after its last request was answered (%v): it keeps per-request state at work", len(extra), window, extra)
	gomega.Expect(tc.Fake.LiveSandboxes()).To(gomega.BeEmpty(), "sandboxes alive after every one was killed")
}

// bareCall calls tool with exactly these arguments: the kit names no
// sandbox for it, even in the modern era (MODERN-1 specs).
func (s *Session) bareCall(ctx context.Context, tool string, args map[string]any) *Result {
	raw, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return s.call(ctx, tool, raw, false)
}

// causedByTheseRequests reports whether a provider request can be work
// left by requests that made the sandboxes in created: one that names one
// of them, or one that names none and searches for nothing in particular
// (a poll). A request for another sandbox, or a list filtered by metadata
// (a server looking for what an earlier spec's failed create left, say),
// is someone else's work.
func causedByTheseRequests(e fakeprovider.Entry, created map[string]bool) bool {
	if e.SandboxID != "" {
		return created[fakeprovider.CanonicalSandboxID(e.SandboxID)]
	}
	return e.Query.Get("metadata") == ""
}
