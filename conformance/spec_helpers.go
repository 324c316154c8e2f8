package conformance

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// mustCreate calls create_sandbox with args (nil means none), asserts a
// successful result with a sandbox_id, and, against the fake, that the
// provider has that sandbox. It returns the ID as the server reported it.
func (s *Session) mustCreate(ctx context.Context, args map[string]any) string {
	ginkgo.GinkgoHelper()
	tc := s.tc
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

// journal is a run of the fake provider's journal entries, in order: what
// the lifecycle and data-plane specs read and assert on. Its methods say
// what they keep or check.
type journal []fakeprovider.Entry

// journal returns every entry the fake has recorded since its last reset.
func (tc *TestContext) journal() journal { return tc.Fake.Journal().Entries() }

// journalFor returns the entries of one sandbox.
func (tc *TestContext) journalFor(id string) journal { return tc.Fake.Journal().ForSandbox(id) }
