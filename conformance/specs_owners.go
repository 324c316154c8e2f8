package conformance

import (
	"context"
	"net/http"
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
	return []Spec{{
		ID:    "cleanup.lost-create",
		Rules: []string{"LOST-1", "SESSION-1"},
		Tools: []string{"create_sandbox"},
		Title: "a create_sandbox {timeout: 86400} whose provider request freezes past the server's deadline is a timeout or " +
			"unavailable tool error, and the sandbox the platform makes after the server gave up is destroyed within the crash bound",
		Optional: "needs the server's provider deadline (--provider-deadline; known for the in-process reference server)",
		Body:     specLostCreate,
	}, {
		ID:    "cleanup.session-sandbox-cap",
		Rules: []string{"QUOTA-1"},
		Tools: []string{"create_sandbox", "kill_sandbox"},
		Title: "a session creates exactly the per-session sandbox cap the server declares; the next create is a rate_limited " +
			"tool error that creates nothing, and after a kill_sandbox a create succeeds again",
		Optional: "needs the server's declared per-session sandbox cap (known for the in-process reference server)",
		Body:     specSessionSandboxCap,
	}, {
		ID:    "cleanup.eviction-spares-busy-session",
		Rules: []string{"QUOTA-2"},
		Tools: []string{"create_sandbox", "run_command", "get_sandbox"},
		Title: "at a server's cap of 2 HTTP sessions, a newcomer never closes the session with a run_command in flight, " +
			"though its call began before the other session's last one: the call is answered and its session goes on serving",
		Optional: capsOptional,
		Body:     specEvictionSparesBusySession,
	}, {
		ID:    "cleanup.eviction-from-largest-holder",
		Rules: []string{"QUOTA-3"},
		Tools: []string{"create_sandbox", "get_sandbox"},
		Title: "at a server's cap of 4 HTTP sessions with none idle, 3 held by one client and 1 by another, a third " +
			"client's newcomer gets in, and the session closed for it is one of the largest holder's",
		Optional: capsOptional,
		Body:     specEvictionFromLargestHolder,
	}, specPrincipalSandboxCap()}
}

// capsOptional says where the eviction specs apply: the kit declares the
// session caps itself.
const capsOptional = "serves a reference server of its own over HTTP with the small session caps it declares: " +
	"runs only against the in-process reference server"

// The session caps of the eviction specs' servers.
const (
	busyEvictionCap = 2
	fairEvictionCap = 4
	// fairEvictionLarge is how many sessions the largest holder has.
	fairEvictionLarge = 3
)

// capsEndpoint starts the target's server with the session caps o, or
// skips the spec where the target cannot declare caps of its own.
func capsEndpoint(tc *TestContext, o server.HTTPOptions) (string, func()) {
	ginkgo.GinkgoHelper()
	ct, ok := tc.run.target.(capsTarget)
	if !ok {
		ginkgo.Skip("the eviction specs need a server whose session caps the kit declares: the in-process reference server")
	}
	endpoint, stop, err := ct.capsServer(o)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "start a server with small session caps")
	return endpoint, stop
}

// capsSession opens a Streamable HTTP session with endpoint as the client
// at address client (sent in X-Forwarded-For; "" sends none).
func capsSession(ctx context.Context, tc *TestContext, endpoint, client string) (*Session, error) {
	headers := map[string]string{}
	if client != "" {
		headers[forwardedFor] = client
	}
	hc := &http.Client{Transport: headerTransport{headers: headers, base: http.DefaultTransport}}
	cctx, cancel := context.WithTimeout(ctx, tc.Config.CallTimeout)
	defer cancel()
	conn, err := connectHTTPWith(cctx, endpoint, hc, ProtocolVersion)
	if err != nil {
		return nil, err
	}
	s := &Session{tc: tc, conn: conn}
	tc.track(s)
	return s, nil
}

// forwardedFor is the header the fairness spec's server trusts for the
// client's address, as behind a reverse proxy (--client-ip-header).
const forwardedFor = "X-Forwarded-For"

// specEvictionSparesBusySession fills a cap of two sessions, holds one
// session's run_command at the provider, then uses the other after that
// call began: a server that took a call in flight for idleness would pick
// the busy session as idle the longest (QUOTA-2).
func specEvictionSparesBusySession(ctx context.Context, tc *TestContext) {
	// Any session without a call in flight is idle enough to give way.
	endpoint, stop := capsEndpoint(tc, server.HTTPOptions{MaxSessions: busyEvictionCap, EvictIdle: time.Nanosecond})
	defer stop()
	busy, err := capsSession(ctx, tc, endpoint, "")
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "open the first session")
	other, err := capsSession(ctx, tc, endpoint, "")
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "open the second session, at the cap of %d", busyEvictionCap)
	busyID, otherID := busy.mustCreate(ctx, nil), other.mustCreate(ctx, nil)

	hang := tc.Fake.InjectFault(fakeprovider.Fault{Op: sandbox.OpProcessStart, SandboxID: busyID, Hang: true})
	defer hang.Clear()
	defer hang.Release()
	answer := make(chan *Result, 1)
	go func() {
		defer ginkgo.GinkgoRecover()
		answer <- busy.Call(ctx, "run_command", map[string]any{"command": "echo in flight", "sandbox_id": busyID})
	}()
	held := tc.WaitFor(ctx, 5*time.Second, func() bool { return hang.InFlight() == 1 })
	gomega.Expect(held).To(gomega.BeTrue(), "the run_command never reached the provider")
	tc.ExpectSuccess(other.Call(ctx, "get_sandbox", map[string]any{"sandbox_id": otherID}))

	newcomer, err := capsSession(ctx, tc, endpoint, "")
	if err != nil {
		ginkgo.AddReportEntry("newcomer at the cap", "refused: "+truncate(err.Error(), 200))
	} else {
		// A server at its cap that lets a newcomer in has closed a
		// session: wait until one of the two has gone (its sandbox
		// destroyed), so the busy call is released only after that.
		ginkgo.AddReportEntry("newcomer at the cap", "admitted")
		evicted := tc.WaitFor(ctx, tc.Config.SettleTimeout, func() bool {
			live := liveIDs(tc)
			return !slices.Contains(live, busyID) || !slices.Contains(live, otherID)
		})
		gomega.Expect(evicted).To(gomega.BeTrue(), "a newcomer got in at the cap of %d, and neither session was closed", busyEvictionCap)
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

// specEvictionFromLargestHolder fills a cap of four sessions, three of
// client A's and one of B's, none idle long enough to give way; client C's
// newcomer must get in, at the cost of one of A's (QUOTA-3).
func specEvictionFromLargestHolder(ctx context.Context, tc *TestContext) {
	endpoint, stop := capsEndpoint(tc, server.HTTPOptions{MaxSessions: fairEvictionCap, EvictIdle: time.Hour, ClientIPHeader: forwardedFor})
	defer stop()
	const clientA, clientB, clientC = "192.0.2.1", "192.0.2.2", "192.0.2.3"
	var largest []string
	for i := range fairEvictionLarge {
		s, err := capsSession(ctx, tc, endpoint, clientA)
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "open client A's session %d", i+1)
		largest = append(largest, s.mustCreate(ctx, nil))
	}
	small, err := capsSession(ctx, tc, endpoint, clientB)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "open client B's session, at the cap of %d", fairEvictionCap)
	smallID := small.mustCreate(ctx, nil)

	newcomer, err := capsSession(ctx, tc, endpoint, clientC)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "client C was refused at the cap of %d while client A held %d sessions: "+
		"a few busy clients lock the rest out (QUOTA-3)", fairEvictionCap, fairEvictionLarge)
	newcomer.mustCreate(ctx, nil)
	held := append([]string{smallID}, largest...)
	var gone []string
	evicted := tc.WaitFor(ctx, tc.Config.SettleTimeout, func() bool {
		gone = newIDs(liveIDs(tc), held)
		return len(gone) > 0
	})
	gomega.Expect(evicted).To(gomega.BeTrue(), "client C got in at the cap of %d, and no session was closed", fairEvictionCap)
	gomega.Expect(gone).NotTo(gomega.ContainElement(smallID), "the session closed for client C's newcomer was client B's, which held 1 session while client A held %d (QUOTA-3)", fairEvictionLarge)
	gomega.Expect(gone).To(gomega.HaveLen(1), "client C's one session closed %d sessions: %s", len(gone), strings.Join(gone, ", "))
	tc.ExpectSuccess(small.Call(ctx, "get_sandbox", map[string]any{"sandbox_id": smallID}))
}

func specSessionSandboxCap(ctx context.Context, tc *TestContext) {
	limit, ok := tc.Config.sessionSandboxCap()
	if !ok {
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
