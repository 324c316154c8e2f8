package conformance

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// createSandbox calls create_sandbox with args (nil means none), asserts a
// successful result with a sandbox_id, and, against the fake, that the
// provider has that sandbox. It returns the ID as the server reported it.
func createSandbox(ctx context.Context, tc *TestContext, s *Session, args map[string]any) string {
	ginkgo.GinkgoHelper()
	if args == nil {
		args = map[string]any{}
	}
	r := tc.ExpectSuccess(s.Call(ctx, "create_sandbox", args))
	id := r.String("sandbox_id")
	gomega.Expect(id).NotTo(gomega.BeEmpty(), "create_sandbox: the result has no sandbox_id")
	if tc.Fake != nil {
		_, ok := tc.Fake.Sandbox(id)
		gomega.Expect(ok).To(gomega.BeTrue(), "create_sandbox returned %q, a sandbox the provider does not have", id)
	}
	return id
}

// skipOrFail skips the spec, or fails it when the run requires every spec.
func skipOrFail(tc *TestContext, msg string) {
	ginkgo.GinkgoHelper()
	if tc.Config.RequireAll {
		ginkgo.Fail(msg)
	}
	ginkgo.Skip(msg)
}
