package conformance

import (
	"context"

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
