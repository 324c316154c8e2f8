package conformance

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

// specTransferURLBoundToPrincipal checks that a transfer URL is minted only
// for a principal that may reach its sandbox (HANDLE-5). The URL itself
// goes to the sandbox's envd, which knows no principal, so the kit checks
// the minting: another principal's url-form call is not_found, carries no
// URL, and (against the fake) reaches no daemon.
func specTransferURLBoundToPrincipal() Spec {
	return Spec{
		ID: "handles.transfer-url-bound-to-principal", Rules: []string{"HANDLE-5"},
		Tools: []string{"create_sandbox", "write_file", "upload_file", "download_file"},
		Title: "answers another principal's upload_file and download_file with transfer \"url\" on a sandbox not its own with not_found and no URL, and signs or reaches nothing for it",
		Body: func(ctx context.Context, tc *TestContext) {
			xferApplicable(tc)
			owner, other := tc.principals(ctx)
			id := owner.mustCreate(ctx, map[string]any{})
			file := scratchDir("urlprincipal") + "/f.txt"
			tc.ExpectSuccess(owner.Call(ctx, "write_file", map[string]any{"path": file, "content": "the owner's", "sandbox_id": id}))
			reached := envdReach(tc)
			for _, tool := range []string{"download_file", "upload_file"} {
				r := other.Call(ctx, tool, map[string]any{"path": file, "transfer": "url", "sandbox_id": id})
				expectNotFound(tc, r, tool+" with transfer \"url\" on another principal's sandbox")
				gomega.Expect(r.JSON).NotTo(gomega.ContainSubstring("signature"), "%s: another principal's refused call carries a signed URL", tool)
			}
			gomega.Expect(envdReach(tc)).To(gomega.Equal(reached), "another principal's url-form calls reached the owner's sandbox (connect, stat or transfer)")
			own := owner.Call(ctx, "download_file", map[string]any{"path": file, "transfer": "url", "sandbox_id": id})
			gomega.Expect(tc.ExpectSuccess(own).String("url")).NotTo(gomega.BeEmpty(), "the owner's own download_file url form has no url")
		},
	}
}

// envdReach counts the fake's calls that reach into a sandbox for a
// transfer URL (connect, stat, the /files routes), or -1 without the fake:
// the kit then judges the results alone.
func envdReach(tc *TestContext) int {
	if tc.Fake == nil {
		return -1
	}
	j := tc.Fake.Journal()
	return j.Count(sandbox.OpConnectSandbox) + j.Count(sandbox.OpFilesystemStat) + j.Count(sandbox.OpFilesDownload) + j.Count(sandbox.OpFilesUpload)
}

// specSessionSandboxBoundToPrincipal checks HANDLE-1 for a sandbox that a
// 2025 session owns: another principal, in a 2025 session or a 2026-07-28
// request, gets not_found for it, and nothing reaches it.
func specSessionSandboxBoundToPrincipal() Spec {
	return Spec{
		ID: "handles.session-sandbox-bound-to-principal", Rules: []string{"HANDLE-1"},
		Tools: []string{"create_sandbox", "get_sandbox", "run_command", "kill_sandbox"},
		Title: "answers another principal's get_sandbox, run_command and kill_sandbox on a sandbox a 2025 session owns with not_found, " +
			"from a 2025 session or a 2026-07-28 request, and lets nothing reach it",
		Body: func(ctx context.Context, tc *TestContext) {
			owner := principalSession(ctx, tc, ProtocolVersion, 0)
			others := map[string]*Session{
				"a 2025 session":       principalSession(ctx, tc, ProtocolVersion, 1),
				"a 2026-07-28 request": principalSession(ctx, tc, ModernProtocolVersion, 1),
			}
			id := owner.mustCreate(ctx, map[string]any{})
			reached := envdReach(tc)
			for what, other := range others {
				for _, c := range []struct {
					tool string
					args map[string]any
				}{
					{"get_sandbox", map[string]any{"sandbox_id": id}},
					{"run_command", map[string]any{"command": hijackMarker, "sandbox_id": id}},
					{"kill_sandbox", map[string]any{"sandbox_id": id}},
				} {
					expectNotFound(tc, other.Call(ctx, c.tool, c.args), c.tool+" in "+what+" of another principal on a 2025 session's sandbox")
				}
			}
			gomega.Expect(envdReach(tc)).To(gomega.Equal(reached), "another principal's calls reached a 2025 session's sandbox")
			if tc.Fake != nil {
				gomega.Expect(tc.kills(id)).To(gomega.BeZero(), "another principal's kill_sandbox reached a 2025 session's sandbox")
			}
			owner.mustRun(ctx, id)
		},
	}
}

// principalSession opens a connection at version as principal 0 or 1, or
// skips the spec where the kit has one principal (tc.principals).
func principalSession(ctx context.Context, tc *TestContext, version string, principal int) *Session {
	ginkgo.GinkgoHelper()
	pt, ok := tc.run.target.(principalTarget)
	if !ok {
		ginkgo.Skip(NotApplicablePrefix + ": the kit has one principal of this server; give a second bearer token (--second-token) to a server that declares principals")
	}
	cctx, cancel := context.WithTimeout(ctx, tc.Config.CallTimeout)
	defer cancel()
	conn, has, err := pt.connectAs(cctx, version, principal)
	if !has {
		ginkgo.Skip(NotApplicablePrefix + ": the kit has one principal of this server; give a second bearer token (--second-token) to a server that declares principals")
	}
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "connect as principal %d", principal+1)
	s := &Session{tc: tc, conn: conn}
	tc.track(s)
	return s
}
