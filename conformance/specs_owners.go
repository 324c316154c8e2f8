package conformance

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// The owners specs check what a server owns when the provider's answer is
// lost (a create the platform carries out after the server gave up on it
// must not leave a sandbox nobody knows: LOST-1), and the per-session
// sandbox cap a server declares (QUOTA-1).

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
	}}
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
