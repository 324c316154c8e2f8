package conformance

import (
	"context"

	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/server"
)

// principalSandboxCap is the per-principal live-sandbox cap the kit
// declares for its own server (serve --sandboxes-per-principal, QUOTA-4).
const principalSandboxCap = 3

// specPrincipalSandboxCap checks QUOTA-4 on a server of the kit's own that
// declares a cap of principalSandboxCap: one principal's creates in two
// 2025 sessions and a 2026-07-28 request count together; the create beyond
// the cap, in any of them, is rate_limited and creates nothing; another
// principal still creates; a kill makes room.
func specPrincipalSandboxCap() Spec {
	return Spec{
		ID:    "cleanup.principal-sandbox-cap",
		Rules: []string{"QUOTA-4"},
		Tools: []string{"create_sandbox", "kill_sandbox"},
		Title: "at a declared cap of 3 live sandboxes per principal, one principal's creates in two 2025 sessions and a 2026-07-28 request " +
			"count together: the fourth, in a session or a request, is a rate_limited tool error that creates nothing, another principal " +
			"still creates, and after a kill_sandbox a create succeeds again",
		Optional: "serves a reference server of its own with --sandboxes-per-principal 3 declared: runs only against the in-process reference server",
		Body:     bodyPrincipalSandboxCap,
	}
}

func bodyPrincipalSandboxCap(ctx context.Context, tc *TestContext) {
	ds := declaredEndpoint(tc, "--sandboxes-per-principal", func(d *server.Deps) { d.Limits.SandboxesPerPrincipal = principalSandboxCap })
	first, second := declaredSession(ctx, tc, ds, 0, ProtocolVersion), declaredSession(ctx, tc, ds, 0, ProtocolVersion)
	modern := declaredSession(ctx, tc, ds, 0, ModernProtocolVersion)
	other := declaredSession(ctx, tc, ds, 1, ProtocolVersion)
	first.mustCreate(ctx, map[string]any{})
	second.mustCreate(ctx, map[string]any{})
	leased := modern.mustCreate(ctx, map[string]any{})
	live := tc.Fake.LiveCount()
	for what, s := range map[string]*Session{"a 2025 session": first, "a 2026-07-28 request": modern} {
		r := s.Call(ctx, "create_sandbox", map[string]any{})
		gomega.Expect(r.IsError).To(gomega.BeTrue(), "a create in %s of a principal at its declared cap of %d live sandboxes succeeded", what, principalSandboxCap)
		tc.ExpectToolError(r, "rate_limited")
	}
	gomega.Expect(tc.Fake.LiveCount()).To(gomega.Equal(live), "a create beyond the principal's cap of %d made a sandbox", principalSandboxCap)
	other.mustCreate(ctx, map[string]any{})
	tc.ExpectSuccess(modern.Call(ctx, "kill_sandbox", map[string]any{"sandbox_id": leased}))
	r := second.Call(ctx, "create_sandbox", map[string]any{})
	gomega.Expect(r.IsError).To(gomega.BeFalse(), "after a kill_sandbox the principal holds %d of %d live sandboxes, and a create was refused: %s",
		principalSandboxCap-1, principalSandboxCap, truncate(r.JSON, 300))
}
