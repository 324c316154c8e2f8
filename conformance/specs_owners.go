package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
	"github.com/sandboxkit/sandboxkit/server"
)

// The owners specs check what a server owns when the provider's answer is
// lost (a create the platform carries out after the server gave up on it
// must not leave a sandbox nobody knows: LOST-1), and the per-session
// sandbox cap a server declares (QUOTA-1), and which HTTP session a
// server at its session cap closes for a newcomer (QUOTA-2, QUOTA-3).

func ownersSpecs() []Spec {
	return []Spec{
		{ID: "cleanup.lost-create", Rules: []string{"LOST-1", "SESSION-1"}, Tools: []string{"create_sandbox"}, Body: specLostCreate,
			Title:    "a create_sandbox {timeout: 86400} whose provider request freezes past the server's deadline is a timeout or unavailable tool error, and the sandbox the platform makes after the server gave up is destroyed within the crash bound",
			Optional: "needs the server's provider deadline (--provider-deadline; known for the in-process reference server)"},
		{ID: "cleanup.session-sandbox-cap", Rules: []string{"QUOTA-1"}, Tools: []string{"create_sandbox", "kill_sandbox"}, Body: specSessionSandboxCap,
			Title:    "a session creates exactly the per-session sandbox cap the server declares; the next create is a rate_limited tool error that creates nothing, and after a kill_sandbox a create succeeds again",
			Optional: "needs the server's declared per-session sandbox cap (known for the in-process reference server)"},
		{ID: "cleanup.eviction-spares-busy-session", Rules: []string{"QUOTA-2"}, Tools: []string{"create_sandbox", "run_command", "get_sandbox"}, Body: specEvictionSparesBusySession,
			Title:    "at a server's cap of HTTP sessions (2 at the kit's own), a newcomer never closes the session with a run_command in flight, though its call began before the other session's last one: the call is answered and its session goes on serving",
			Optional: capsOptional},
		{ID: "cleanup.eviction-from-largest-holder", Rules: []string{"QUOTA-3"}, Tools: []string{"create_sandbox", "get_sandbox"}, Body: specEvictionFromLargestHolder,
			Title:    "at a server's cap of HTTP sessions (4 at the kit's own) with none idle, all but 1 held by one client and 1 by another, a third client's newcomer gets in, and the session closed for it is one of the largest holder's",
			Optional: capsOptional},
		{ID: "cleanup.principal-sandbox-cap", Rules: []string{"QUOTA-4"}, Tools: []string{"create_sandbox", "kill_sandbox"}, Body: specPrincipalSandboxCap,
			Title:    "at a declared cap of live sandboxes per principal, one principal's creates in two 2025 sessions and a 2026-07-28 request count together: the one beyond, in a session or a request, is a rate_limited tool error that creates nothing, another principal still creates, and after a kill_sandbox a create succeeds again",
			Optional: "in-process the kit serves a reference server of its own with --sandboxes-per-principal 3; a server URL is held to the cap its user declares (conform --sandboxes-per-principal), as two principals (--second-token-file)"},
	}
}

// capsOptional says where the eviction specs apply: where the kit knows
// the session caps.
const capsOptional = "needs a server at session caps the kit knows: the in-process reference server " +
	"(the kit serves one of its own with small caps), or a server URL that declares its cap (--max-sessions)"

// The session caps of the eviction specs' own servers.
const (
	busyEvictionCap = 2
	fairEvictionCap = 4
)

// forwardedFor is the header the fairness spec's server trusts for the
// client's address, as behind a reverse proxy (--client-ip-header).
const forwardedFor = "X-Forwarded-For"

// capsFill opens n sessions with cs as the client at address client,
// each owning a sandbox of its own: the sessions and their sandboxes' IDs,
// in order. held is how many sessions the spec holds already.
func capsFill(ctx context.Context, tc *TestContext, cs capsServer, n, held int, client string) ([]*Session, []string) {
	ginkgo.GinkgoHelper()
	sessions, ids := make([]*Session, 0, n), make([]string, 0, n)
	for range n {
		s, err := capsSession(ctx, tc, cs, client)
		cs.expect(err == nil, "session %d of a cap of %d was refused: %v", held+len(sessions)+1, cs.limit, err)
		sessions, ids = append(sessions, s), append(ids, s.mustCreate(ctx, nil))
	}
	return sessions, ids
}

// capsServing checks that each of the spec's sessions still serves (its
// sandbox, of the same index in ids, is there), as a session the server
// closed below its cap would not.
func capsServing(ctx context.Context, tc *TestContext, cs capsServer, sessions []*Session, ids []string) {
	ginkgo.GinkgoHelper()
	for i, s := range sessions {
		r := s.Call(ctx, "get_sandbox", map[string]any{"sandbox_id": ids[i]})
		cs.expect(r.Err == nil, "below the cap of %d, session %d of the spec's was closed: %v", cs.limit, i+1, r.Err)
		tc.ExpectSuccess(r)
	}
}

// specEvictionSparesBusySession fills the session cap, holds the first
// session's run_command at the provider, then uses the others after that
// call began: a server that took a call in flight for idleness would pick
// the busy session as idle the longest (QUOTA-2).
func specEvictionSparesBusySession(ctx context.Context, tc *TestContext) {
	// Any session without a call in flight is idle enough to give way.
	cs := capsEndpoint(tc, server.HTTPOptions{MaxSessions: busyEvictionCap, EvictIdle: time.Nanosecond})
	defer cs.stop()
	sessions, ids := capsFill(ctx, tc, cs, cs.limit, 0, "")
	capsServing(ctx, tc, cs, sessions, ids)
	busy, busyID := sessions[0], ids[0]

	hang := tc.Fake.InjectFault(fakeprovider.Fault{Op: sandbox.OpProcessStart, SandboxID: busyID, Hang: true})
	defer hang.Clear()
	defer hang.Release()
	answer := make(chan *Result, 1)
	go func() {
		defer ginkgo.GinkgoRecover()
		answer <- busy.Call(ctx, "run_command", map[string]any{"command": "echo in flight", "sandbox_id": busyID})
	}()
	held := tc.WaitFor(ctx, 5*time.Second, func() bool { return hang.InFlight() == 1 })
	if !held {
		select {
		case r := <-answer:
			cs.expect(r.Err == nil, "below the cap of %d, the spec's first session was closed: %v", cs.limit, r.Err)
			ginkgo.Fail("the run_command was answered without reaching the provider: " + truncate(r.JSON, 300))
		default:
			ginkgo.Fail("the run_command never reached the provider")
		}
	}
	capsServing(ctx, tc, cs, sessions[1:], ids[1:])

	newcomer, err := capsSession(ctx, tc, cs, "")
	if err != nil {
		ginkgo.AddReportEntry("newcomer at the cap", "refused: "+truncate(err.Error(), 200))
	} else {
		// A server at its cap that lets a newcomer in has closed a
		// session: wait until one has gone (its sandbox destroyed), so
		// the busy call is released only after that.
		ginkgo.AddReportEntry("newcomer at the cap", "admitted")
		evicted := tc.WaitFor(ctx, tc.Config.SettleTimeout, func() bool { return len(newIDs(liveIDs(tc), ids)) > 0 })
		cs.expect(evicted, "a newcomer got in at the cap of %d, and no session was closed", cs.limit)
		newcomer.mustCreate(ctx, nil)
	}
	hang.Release()
	var r *Result
	select {
	case r = <-answer:
	case <-time.After(tc.allow(ctx, tc.Config.CallTimeout)):
		ginkgo.Fail("the run_command in flight when a newcomer came at the session cap was never answered (QUOTA-2)")
	}
	gomega.Expect(r.Err).NotTo(gomega.HaveOccurred(), "the run_command in flight when a newcomer came at the session cap got no answer: "+
		"its session was closed to make room (QUOTA-2)")
	tc.ExpectSuccess(r)
	r = busy.Call(ctx, "run_command", map[string]any{"command": "echo still here", "sandbox_id": busyID})
	gomega.Expect(r.Err).NotTo(gomega.HaveOccurred(), "the session whose call was in flight when a newcomer came no longer serves (QUOTA-2)")
	gomega.Expect(r.IsError).To(gomega.BeFalse(), "the session whose call was in flight when a newcomer came lost its sandbox (QUOTA-2): %s", truncate(r.JSON, 300))
}

// specEvictionFromLargestHolder fills the session cap (4 at the kit's own
// server) with all but one of client A's sessions and one of B's, none
// idle long enough to give way; client C's newcomer must get in, at the
// cost of one of A's (QUOTA-3).
func specEvictionFromLargestHolder(ctx context.Context, tc *TestContext) {
	cs := capsEndpoint(tc, server.HTTPOptions{MaxSessions: fairEvictionCap, EvictIdle: time.Hour, ClientIPHeader: forwardedFor})
	defer cs.stop()
	if cs.limit < 3 {
		ginkgo.Skip(fmt.Sprintf("a declared cap of %d sessions leaves no client holding more than another: it takes 3", cs.limit))
	}
	const clientA, clientB, clientC = "192.0.2.1", "192.0.2.2", "192.0.2.3"
	large := cs.limit - 1
	larges, largest := capsFill(ctx, tc, cs, large, 0, clientA)
	smalls, smallIDs := capsFill(ctx, tc, cs, 1, large, clientB)
	capsServing(ctx, tc, cs, append(larges, smalls...), append(slices.Clone(largest), smallIDs...))

	newcomer, err := capsSession(ctx, tc, cs, clientC)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "client C was refused at the cap of %d while client A held %d sessions: "+
		"a few busy clients lock the rest out (QUOTA-3)", cs.limit, large)
	newcomer.mustCreate(ctx, nil)
	held := append(smallIDs, largest...)
	var gone []string
	evicted := tc.WaitFor(ctx, tc.Config.SettleTimeout, func() bool {
		gone = newIDs(liveIDs(tc), held)
		return len(gone) > 0
	})
	cs.expect(evicted, "client C got in at the cap of %d, and no session was closed", cs.limit)
	gomega.Expect(gone).NotTo(gomega.ContainElement(smallIDs[0]), "the session closed for client C's newcomer was client B's, which held 1 session while client A held %d (QUOTA-3)", large)
	gomega.Expect(gone).To(gomega.HaveLen(1), "client C's one session closed %d sessions: %s", len(gone), strings.Join(gone, ", "))
	tc.ExpectSuccess(smalls[0].Call(ctx, "get_sandbox", map[string]any{"sandbox_id": smallIDs[0]}))
}

func specSessionSandboxCap(ctx context.Context, tc *TestContext) {
	limit := tc.Config.declared().SandboxesPerSession
	if limit <= 0 {
		ginkgo.Skip("the server declares no per-session sandbox cap the kit knows")
	}
	s := tc.Connect(ctx)
	ids := make([]string, 0, limit)
	for i := range limit {
		r := s.Call(ctx, "create_sandbox", map[string]any{})
		gomega.Expect(r.IsError).To(gomega.BeFalse(), "create %d of a declared cap of %d was refused: %s", i+1, limit, truncate(r.JSON, 300))
		ids = append(ids, tc.ExpectSuccess(r).String("sandbox_id"))
	}
	live := tc.Fake.LiveCount()
	r := s.Call(ctx, "create_sandbox", map[string]any{})
	tc.ExpectToolError(r, "rate_limited")
	gomega.Expect(tc.Fake.LiveCount()).To(gomega.Equal(live), "the create beyond the cap of %d made a sandbox", limit)
	tc.ExpectSuccess(s.Call(ctx, "kill_sandbox", map[string]any{"sandbox_id": ids[0]}))
	r = s.Call(ctx, "create_sandbox", map[string]any{})
	gomega.Expect(r.IsError).To(gomega.BeFalse(), "after a kill_sandbox the session holds %d of %d sandboxes, and a create was refused: %s", limit-1, limit, truncate(r.JSON, 300))
}

func specLostCreate(ctx context.Context, tc *TestContext) {
	deadline, ok := tc.Config.providerDeadline()
	if !ok {
		ginkgo.Skip("the server's provider deadline is unknown: pass --provider-deadline to check a lost create")
	}
	s := tc.Connect(ctx)
	before := liveIDs(tc)
	// The platform freezes on the create and carries it out only once
	// released, whether or not the server still waits for it.
	// (Both create routes, v1 and v2, are this operation.)
	frozen := tc.Fake.InjectFault(fakeprovider.Fault{Op: sandbox.OpCreateSandbox, Hang: true, Orphan: true, Times: 1})
	defer frozen.Release()
	// Listings wait until the late sandbox exists: a server that looks for
	// it at once, and only once, then finds it too. Whether a server looks
	// again later is its own bound's business; this spec checks the result.
	lists := tc.Fake.InjectFault(fakeprovider.Fault{Op: sandbox.OpListSandboxes, Hang: true})
	defer lists.Release()
	cctx, cancel := context.WithTimeout(ctx, tc.allow(ctx, 4*deadline))
	r := s.Call(cctx, "create_sandbox", map[string]any{"timeout": 86400})
	cancel()
	gomega.Expect(r.IsError).To(gomega.BeTrue(), "a create the provider never answered must be a tool error: %s", truncate(r.JSON, 300))
	gomega.Expect(r.Category()).To(gomega.BeElementOf("timeout", "unavailable"), "the category of a create that got no answer")

	// Only now does the platform make the sandbox.
	frozen.Release()
	made := tc.WaitFor(ctx, tc.Config.SettleTimeout, func() bool { return frozen.InFlight() == 0 })
	gomega.Expect(made).To(gomega.BeTrue(), "the released create did not finish at the fake")
	gomega.Expect(frozen.Hits()).To(gomega.Equal(1), "the server sent %d creates, want 1", frozen.Hits())
	lists.Release()

	bound := tc.Config.crashBound()
	released := time.Now()
	var left []string
	gone := tc.WaitFor(ctx, bound, func() bool {
		left = newIDs(before, liveIDs(tc))
		return len(left) == 0
	})
	gomega.Expect(gone).To(gomega.BeTrue(), "%v after the platform carried out the create the server gave up on, sandbox %s still runs (crash bound %v): "+
		"a lost create must be found (by a nonce in its metadata, say) and destroyed", time.Since(released).Round(time.Millisecond), strings.Join(left, ", "), bound)
	ginkgo.AddReportEntry("late sandbox to destroyed", time.Since(released).Round(time.Millisecond).String())
}

// liveIDs lists the IDs of the fake's live sandboxes.
func liveIDs(tc *TestContext) []string {
	var ids []string
	for _, rec := range tc.Fake.LiveSandboxes() {
		ids = append(ids, rec.ID)
	}
	return ids
}

// newIDs returns the IDs of now that are not in before.
func newIDs(before, now []string) []string {
	var out []string
	for _, id := range now {
		if !slices.Contains(before, id) {
			out = append(out, id)
		}
	}
	return out
}

// principalSandboxCap is the per-principal live-sandbox cap the kit
// declares for its own server (serve --sandboxes-per-principal, QUOTA-4).
const principalSandboxCap = 3

// specPrincipalSandboxCap checks QUOTA-4 at a declared cap (the kit's own
// server at principalSandboxCap, or a server URL at its user's
// --sandboxes-per-principal): one principal's creates in two 2025 sessions
// and a 2026-07-28 request count together; the create beyond the cap, in
// any of them, is rate_limited and creates nothing; another principal still
// creates; a kill makes room.

func specPrincipalSandboxCap(ctx context.Context, tc *TestContext) {
	limit := tc.Config.declared().SandboxesPerPrincipal
	ds := declaredEndpoint(tc, "--sandboxes-per-principal", limit > 0, 2,
		func(d *server.Deps) { d.Limits.SandboxesPerPrincipal = principalSandboxCap })
	if ds.own {
		limit = principalSandboxCap
	}
	first, second := declaredSession(ctx, tc, ds, 0, ProtocolVersion), declaredSession(ctx, tc, ds, 0, ProtocolVersion)
	modern := declaredSession(ctx, tc, ds, 0, ModernProtocolVersion)
	other := declaredSession(ctx, tc, ds, 1, ProtocolVersion)
	// The request creates one sandbox (killed below: a leased sandbox
	// outlives the spec's sessions), the two sessions take turns at the
	// rest of the cap.
	var leased string
	for i := 0; i < limit; i++ {
		maker := []*Session{first, second}[i%2]
		if i == 0 {
			maker = modern
		}
		r := maker.Call(ctx, "create_sandbox", map[string]any{})
		gomega.Expect(r.IsError).To(gomega.BeFalse(), "create %d of %d, within the principal's declared cap of %d live sandboxes, was refused "+
			"(against a server URL: does the first principal hold other sandboxes?): %s", i+1, limit, limit, truncate(r.JSON, 300))
		if i == 0 {
			leased = r.String("sandbox_id")
		}
	}
	live := liveCount(tc)
	for what, s := range map[string]*Session{"a 2025 session": first, "a 2026-07-28 request": modern} {
		r := s.Call(ctx, "create_sandbox", map[string]any{})
		gomega.Expect(r.IsError).To(gomega.BeTrue(), "a create in %s of a principal at its declared cap of %d live sandboxes succeeded", what, limit)
		tc.ExpectToolError(r, "rate_limited")
	}
	gomega.Expect(liveCount(tc)).To(gomega.Equal(live), "a create beyond the principal's cap of %d made a sandbox", limit)
	other.mustCreate(ctx, map[string]any{})
	tc.ExpectSuccess(modern.Call(ctx, "kill_sandbox", map[string]any{"sandbox_id": leased}))
	r := second.Call(ctx, "create_sandbox", map[string]any{})
	gomega.Expect(r.IsError).To(gomega.BeFalse(), "after a kill_sandbox the principal holds %d of %d live sandboxes, and a create was refused: %s",
		limit-1, limit, truncate(r.JSON, 300))
}

// liveCount counts the fake's live sandboxes, or -1 without the fake (a
// cloud run, where the tool answers alone show what was made).
func liveCount(tc *TestContext) int {
	if tc.Fake == nil {
		return -1
	}
	return tc.Fake.LiveCount()
}
