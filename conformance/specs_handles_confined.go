package conformance

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
	"github.com/sandboxkit/sandboxkit/server"
)

// confinedOptional says where the own-sandboxes spec applies: the kit
// declares the option itself, or the user does.
const confinedOptional = "in-process the kit serves a reference server of its own with --own-sandboxes-only; " +
	"another server is held to it only where its user declares it (conform --own-sandboxes-only)"

// specOwnSandboxesOnly checks a server that confines each principal to its
// own sandboxes (HANDLE-6): an external ID is not_found as an unknown one,
// and nothing reaches it; the principal's own sandbox stays reachable.
func specOwnSandboxesOnly() Spec {
	return Spec{
		ID: "handles.own-sandboxes-only", Rules: []string{"HANDLE-6"}, NeedsFake: true, Optional: confinedOptional,
		Tools: []string{"create_sandbox", "get_sandbox", "run_command", "set_sandbox_timeout", "kill_sandbox", "list_sandboxes"},
		Title: "on a server confined to own sandboxes, answers an external sandbox_id with not_found as an unknown one, reaches nothing of it and lists it not, and still serves the principal's own",
		Body: func(ctx context.Context, tc *TestContext) {
			s := confinedSession(ctx, tc)
			external := tc.Seed(fakeprovider.SandboxSeed{})
			own := s.mustCreate(ctx, map[string]any{})
			unknown := s.Call(ctx, "get_sandbox", map[string]any{"sandbox_id": unknownSandboxID})
			expectNotFound(tc, unknown, "get_sandbox of an unknown sandbox")
			j := tc.Fake.Journal()
			ops := []string{sandbox.OpConnectSandbox, sandbox.OpSetTimeout, sandbox.OpKillSandbox, sandbox.OpProcessStart}
			before := make([]int, len(ops))
			for i, op := range ops {
				before[i] = j.Count(op)
			}
			for _, c := range []struct {
				tool string
				args map[string]any
			}{
				{"get_sandbox", map[string]any{"sandbox_id": external}},
				{"run_command", map[string]any{"command": hijackMarker, "sandbox_id": external}},
				{"set_sandbox_timeout", map[string]any{"sandbox_id": external, "timeout": 10}},
				{"kill_sandbox", map[string]any{"sandbox_id": external}},
			} {
				r := s.Call(ctx, c.tool, c.args)
				expectNotFound(tc, r, c.tool+" of an external sandbox on a confined server")
				gomega.Expect(r.ErrorObject()).To(gomega.Equal(unknown.ErrorObject()), "%s of an external sandbox: not answered exactly as an unknown one", c.tool)
			}
			for i, op := range ops {
				gomega.Expect(j.Count(op)).To(gomega.Equal(before[i]), "calls on an external sandbox reached it (%s) on a confined server", op)
			}
			_, alive := tc.Fake.Sandbox(external)
			gomega.Expect(alive).To(gomega.BeTrue(), "the external sandbox is gone after a confined server's refusals")
			listed := tc.ExpectSuccess(s.Call(ctx, "list_sandboxes", map[string]any{})).JSON
			gomega.Expect(listed).NotTo(gomega.ContainSubstring(external), "a confined server lists an external sandbox")
			tc.ExpectSuccess(s.Call(ctx, "run_command", map[string]any{"command": "true", "sandbox_id": own}))
			tc.ExpectSuccess(s.Call(ctx, "kill_sandbox", map[string]any{"sandbox_id": own}))
		},
	}
}

// confinedSession opens a session, in the spec's era, with a server that
// declares HANDLE-6: the kit's own, or the server under test where its
// user declares it; or skips the spec.
func confinedSession(ctx context.Context, tc *TestContext) *Session {
	ginkgo.GinkgoHelper()
	ds := declaredEndpoint(tc, "--own-sandboxes-only", tc.Config.declared().OwnSandboxesOnly, 1,
		func(d *server.Deps) { d.OwnSandboxesOnly = true })
	return declaredSession(ctx, tc, ds, 0, tc.era.version())
}
