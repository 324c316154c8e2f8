package conformance

import (
	"context"

	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/server"
)

// principalSandboxCap is the per-principal live-sandbox cap the kit
// declares for its own server (serve --sandboxes-per-principal, QUOTA-4).
const principalSandboxCap = 3

// specPrincipalSandboxCap checks QUOTA-4 at a declared cap (the kit's own
// server at principalSandboxCap, or a server URL at its user's
// --sandboxes-per-principal): one principal's creates in two 2025 sessions
// and a 2026-07-28 request count together; the create beyond the cap, in
// any of them, is rate_limited and creates nothing; another principal still
// creates; a kill makes room.
func specPrincipalSandboxCap() Spec {
	return Spec{
		ID:    "cleanup.principal-sandbox-cap",
		Rules: []string{"QUOTA-4"},
		Tools: []string{"create_sandbox", "kill_sandbox"},
		Title: "at a declared cap of live sandboxes per principal, one principal's creates in two 2025 sessions and a 2026-07-28 request " +
			"count together: the one beyond, in a session or a request, is a rate_limited tool error that creates nothing, another principal " +
			"still creates, and after a kill_sandbox a create succeeds again",
		Optional: "in-process the kit serves a reference server of its own with --sandboxes-per-principal 3; a server URL is held to " +
			"the cap its user declares (conform --sandboxes-per-principal), as two principals (--second-token-file)",
		Body: bodyPrincipalSandboxCap,
	}
}

func bodyPrincipalSandboxCap(ctx context.Context, tc *TestContext) {
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
