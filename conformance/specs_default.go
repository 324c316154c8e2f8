package conformance

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// The default family checks how a session resolves its default sandbox:
// which calls set it, which leave it alone, and what happens without one.

func defaultSpecs() []Spec {
	return []Spec{
		{ID: "default.create-sets-default", Rules: []string{"CREATE-5", "GET-1"}, Tools: []string{"create_sandbox", "get_sandbox"}, Body: specCreateSetsDefault,
			Title: "create_sandbox makes the new sandbox the session's default, and a second create moves the default to the newer one"},
		{ID: "default.explicit-get-keeps-default", Rules: []string{"GET-1", "GET-4"}, Tools: []string{"create_sandbox", "get_sandbox"}, Body: specExplicitGetKeepsDefault,
			Title: "get_sandbox with an explicit sandbox_id, owned or external, does not change the default"},
		{ID: "default.no-default-lifecycle", Rules: []string{"GET-2", "TIMEOUT-2", "SESSION-2"}, Tools: []string{"get_sandbox", "set_sandbox_timeout", "kill_sandbox"}, Body: specNoDefaultLifecycle,
			Title: "without a default sandbox, get_sandbox {} and set_sandbox_timeout {timeout} are tool errors that make no platform request and create nothing, and kill_sandbox {} creates nothing"},
		{ID: "default.timeout-uses-default", Rules: []string{"TIMEOUT-2"}, Tools: []string{"create_sandbox", "set_sandbox_timeout"}, Body: specTimeoutUsesDefault,
			Title: "set_sandbox_timeout without sandbox_id updates the session's default sandbox and no other"},
		{ID: "default.list-never-sets-default", Rules: []string{"LIST-2"}, Tools: []string{"list_sandboxes", "create_sandbox", "get_sandbox", "run_command"}, Body: specListNeverSetsDefault,
			Title: "list_sandboxes never picks or changes the default: without one there is still none, with one it stays"},
		{ID: "default.kill-clears-default", Rules: []string{"SESSION-3"}, Tools: []string{"create_sandbox", "kill_sandbox", "get_sandbox", "set_sandbox_timeout"}, Body: specKillClearsDefault,
			Title: "kill_sandbox {} kills the default sandbox and clears the default, so a following get_sandbox {} is a tool error"},
		{ID: "default.kill-gone-default", Rules: []string{"SESSION-3"}, Tools: []string{"create_sandbox", "kill_sandbox"}, Body: specKillGoneDefault,
			Title: "kill_sandbox {} on a default sandbox that has already expired is a not_found tool error"},
		{ID: "default.exec-creates-default", Rules: []string{"SESSION-2", "CREATE-5"}, Tools: []string{"run_command", "get_sandbox"}, Body: specExecCreatesDefault,
			Title: "run_command without sandbox_id and without a default creates one sandbox that becomes the default and is owned"},
		{ID: "default.sessions-independent", Rules: []string{"SESSION-1", "SESSION-2"}, Tools: []string{"create_sandbox", "get_sandbox", "run_command"}, Body: specSessionsIndependent,
			Title: "two sessions have independent defaults: one session's create is not the other's default"},
		{ID: "default.concurrent-implicit-create", Rules: []string{"SESSION-2", "SESSION-1"}, Tools: []string{"run_command"}, Body: specConcurrentImplicitCreate,
			Title: "data-plane calls sent at once without sandbox_id and without a default create exactly one sandbox, all run in it, and the close destroys it once"},
	}
}

// expectDefault asserts that get_sandbox {} names id.
func (s *Session) expectDefault(ctx context.Context, id, why string) {
	ginkgo.GinkgoHelper()
	r := s.mustGet(ctx, "")
	gomega.Expect(r.String("sandbox_id")).To(gomega.Equal(id), "%s: get_sandbox {} names the default sandbox", why)
}

// expectNoDefault asserts that get_sandbox {} is a tool error that makes
// no platform request and creates nothing.
func (s *Session) expectNoDefault(ctx context.Context, why string) {
	ginkgo.GinkgoHelper()
	tc := s.tc
	before := tc.Fake.Journal().Len()
	live := tc.Fake.LiveCount()
	tc.ExpectToolError(s.Call(ctx, "get_sandbox", map[string]any{}), "")
	gomega.Expect(tc.Fake.Journal().Len()).To(gomega.Equal(before), "%s: get_sandbox {} without a default called the provider", why)
	gomega.Expect(tc.Fake.LiveCount()).To(gomega.Equal(live), "%s: get_sandbox {} created a sandbox", why)
}

func specCreateSetsDefault(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	a := s.mustCreate(ctx, nil)
	tc.Fake.Journal().Reset()
	r := s.mustGet(ctx, "")
	gomega.Expect(r.String("sandbox_id")).To(gomega.Equal(a), "the created sandbox is the default")
	gomega.Expect(r.String("status")).To(gomega.Equal("running"))
	tc.journal().ExpectOps("get_sandbox {}", sandbox.OpGetSandbox)
	gomega.Expect(tc.journal()[0].SandboxID).To(gomega.Equal(a))

	b := s.mustCreate(ctx, nil)
	gomega.Expect(b).NotTo(gomega.Equal(a))
	s.expectDefault(ctx, b, "after a second create_sandbox")
	gomega.Expect(tc.live(a)).To(gomega.BeTrue(), "the earlier sandbox stays alive (still owned)")
}

func specExplicitGetKeepsDefault(ctx context.Context, tc *TestContext) {
	ext := tc.seedExternal()
	s := tc.Connect(ctx)
	a := s.mustCreate(ctx, nil)
	b := s.mustCreate(ctx, nil)
	gomega.Expect(s.mustGet(ctx, a).String("sandbox_id")).To(gomega.Equal(a))
	s.expectDefault(ctx, b, "after get_sandbox on another owned sandbox")
	gomega.Expect(s.mustGet(ctx, ext).String("sandbox_id")).To(gomega.Equal(ext))
	s.expectDefault(ctx, b, "after get_sandbox on an external sandbox")
}

func specNoDefaultLifecycle(ctx context.Context, tc *TestContext) {
	ext := tc.seedExternal() // a sandbox a careless server might pick
	s := tc.Connect(ctx)
	tc.Fake.Journal().Reset()

	tc.ExpectToolError(s.Call(ctx, "get_sandbox", map[string]any{}), "")
	tc.ExpectNoRequests("get_sandbox {} without a default")
	tc.ExpectToolError(s.Call(ctx, "set_sandbox_timeout", map[string]any{"timeout": 60}), "")
	tc.ExpectNoRequests("set_sandbox_timeout {timeout} without a default")
	r := s.Call(ctx, "kill_sandbox", map[string]any{})
	gomega.Expect(r.Err).NotTo(gomega.HaveOccurred(), "kill_sandbox {} without a default: protocol error")
	tc.ExpectNoRequests("kill_sandbox {} without a default")
	gomega.Expect(tc.Fake.LiveCount()).To(gomega.Equal(1), "a lifecycle tool created a sandbox")
	tc.expectUntouched(ext, "lifecycle tools without a default")
	s.expectNoDefault(ctx, "still no default")
}

func specTimeoutUsesDefault(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	a := s.mustCreate(ctx, nil)
	b := s.mustCreate(ctx, nil)
	aEnd, _ := tc.Fake.Sandbox(a)
	tc.Clock.Advance(20 * time.Second)
	tc.Fake.Journal().Reset()

	r := tc.ExpectSuccess(s.Call(ctx, "set_sandbox_timeout", map[string]any{"timeout": 450}))
	gomega.Expect(r.String("sandbox_id")).To(gomega.Equal(b), "set_sandbox_timeout {} applies to the default sandbox")
	entries := tc.journal()
	entries.ExpectOps("set_sandbox_timeout {timeout}", sandbox.OpSetTimeout)
	gomega.Expect(entries[0].SandboxID).To(gomega.Equal(b))
	gomega.Expect(timeoutBody(entries[0])).To(gomega.BeEquivalentTo(450))
	tc.expectEndAt(b, tc.Clock.Now().Add(450*time.Second), "the default sandbox")
	tc.expectEndAt(a, aEnd.EndAt, "the other owned sandbox is not touched")
}

func specListNeverSetsDefault(ctx context.Context, tc *TestContext) {
	seeded := []string{tc.seedExternal(), tc.seedExternal()}
	s := tc.Connect(ctx)
	tc.Fake.Journal().Reset()
	r := tc.ExpectSuccess(s.Call(ctx, "list_sandboxes", map[string]any{}))
	gomega.Expect(listedIDs(r)).To(gomega.ConsistOf(seeded))
	s.expectNoDefault(ctx, "after list_sandboxes")
	gomega.Expect(tc.Fake.Journal().Ops()).To(gomega.ConsistOf(sandbox.OpListSandboxes), "list_sandboxes made other requests")

	a := s.mustCreate(ctx, nil)
	r = tc.ExpectSuccess(s.Call(ctx, "list_sandboxes", map[string]any{}))
	gomega.Expect(listedIDs(r)).To(gomega.ContainElements(append(seeded, a)))
	s.expectDefault(ctx, a, "after a second list_sandboxes")

	// run_command without sandbox_id goes to the default, not to a listed sandbox.
	tc.Fake.Journal().Reset()
	s.mustRun(ctx, "")
	gomega.Expect(tc.Fake.Journal().Count(sandbox.OpCreateSandbox)).To(gomega.BeZero(), "run_command created a sandbox although there is a default")
	for _, e := range tc.journal() {
		if e.SandboxID != "" {
			gomega.Expect(e.SandboxID).To(gomega.Equal(a), "run_command {} reached a sandbox other than the default (%s)", e.Op)
		}
	}
}

func specKillClearsDefault(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	a := s.mustCreate(ctx, nil)
	tc.Fake.Journal().Reset()

	r := tc.ExpectSuccess(s.Call(ctx, "kill_sandbox", map[string]any{}))
	gomega.Expect(r.String("sandbox_id")).To(gomega.Equal(a), "kill_sandbox {} kills the default")
	entries := tc.journal()
	entries.ExpectOps("kill_sandbox {}", sandbox.OpKillSandbox)
	gomega.Expect(entries[0].SandboxID).To(gomega.Equal(a))
	gomega.Expect(tc.live(a)).To(gomega.BeFalse(), "the default sandbox was not destroyed")

	tc.Fake.Journal().Reset()
	s.expectNoDefault(ctx, "after kill_sandbox {}")
	tc.ExpectToolError(s.Call(ctx, "set_sandbox_timeout", map[string]any{"timeout": 60}), "")
	tc.ExpectNoRequests("set_sandbox_timeout {timeout} after the default was killed")
}

func specKillGoneDefault(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	a := s.mustCreate(ctx, map[string]any{"timeout": 60})
	tc.Clock.Advance(2 * time.Minute) // the platform lets it expire
	gomega.Expect(tc.live(a)).To(gomega.BeFalse(), "the sandbox should have expired")
	tc.Fake.Journal().Reset()
	tc.ExpectToolError(s.Call(ctx, "kill_sandbox", map[string]any{}), "not_found")
	for _, e := range tc.journal() {
		gomega.Expect(e.Op).NotTo(gomega.Equal(sandbox.OpConnectSandbox), "kill_sandbox must not connect")
		gomega.Expect(e.Op).NotTo(gomega.Equal(sandbox.OpCreateSandbox), "kill_sandbox must not create")
	}
}

func specExecCreatesDefault(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	tc.Fake.Journal().Reset()
	s.mustRun(ctx, "")
	gomega.Expect(tc.Fake.Journal().Count(sandbox.OpCreateSandbox)).To(gomega.Equal(1), "run_command without a default creates exactly one sandbox")
	live := tc.Fake.LiveSandboxes()
	gomega.Expect(live).To(gomega.HaveLen(1))
	id := live[0].ID
	for _, e := range tc.journal() {
		if e.Envd {
			gomega.Expect(fakeprovider.SameSandbox(e.SandboxID, id)).To(gomega.BeTrue(), "the command ran in sandbox %s, not %s, the one created", e.SandboxID, id)
		}
	}
	s.expectDefault(ctx, id, "after run_command created a sandbox")
	s.mustRun(ctx, "")
	gomega.Expect(tc.Fake.Journal().Count(sandbox.OpCreateSandbox)).To(gomega.Equal(1), "a second run_command created another sandbox")

	tc.closeSession(ctx, s, id)
	gomega.Expect(tc.kills(id)).To(gomega.Equal(1), "the implicitly created sandbox is owned: destroyed once at close")
}

func specSessionsIndependent(ctx context.Context, tc *TestContext) {
	s1 := tc.Connect(ctx)
	s2 := tc.Connect(ctx)
	a := s1.mustCreate(ctx, nil)
	s2.expectNoDefault(ctx, "another session's create")
	b := s2.mustCreate(ctx, nil)
	s1.expectDefault(ctx, a, "session 1")
	s2.expectDefault(ctx, b, "session 2")

	tc.Fake.Journal().Reset()
	s2.mustRun(ctx, "")
	for _, e := range tc.journal() {
		if e.SandboxID != "" {
			gomega.Expect(e.SandboxID).To(gomega.Equal(b), "session 2's run_command {} reached another session's sandbox (%s)", e.Op)
		}
	}

	tc.closeSession(ctx, s2, b)
	gomega.Expect(tc.live(a)).To(gomega.BeTrue(), "closing session 2 destroyed session 1's sandbox")
	s1.expectDefault(ctx, a, "session 1 after session 2 closed")
}

// concurrentImplicitCalls are data-plane calls without sandbox_id that may
// each create the session's default sandbox; sent at once, exactly one
// sandbox must result (SESSION-2).
var concurrentImplicitCalls = []struct {
	tool string
	args map[string]any
}{
	{"run_command", map[string]any{"command": "echo one"}},
	{"run_command", map[string]any{"command": "echo two"}},
	{"write_file", map[string]any{"path": "/home/user/concurrent.txt", "content": "x"}},
	{"list_files", map[string]any{"path": "/home/user"}},
	{"run_code", map[string]any{"code": "echo three", "language": "bash"}},
	{"start_background_command", map[string]any{"command": "echo four"}},
}

// concurrentCreateDelay holds the platform's answer to the first create, so
// that every concurrent call arrives while it is in flight.
const concurrentCreateDelay = 400 * time.Millisecond

func specConcurrentImplicitCreate(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	type call struct {
		tool string
		args map[string]any
	}
	var calls []call
	for _, c := range concurrentImplicitCalls {
		if tc.Advertised(c.tool) != nil {
			calls = append(calls, call{c.tool, c.args})
		}
	}
	slow := tc.Fake.InjectFault(fakeprovider.Fault{Op: sandbox.OpCreateSandbox, Delay: concurrentCreateDelay})
	defer slow.Clear()
	tc.Fake.Journal().Reset()

	results := make([]*Result, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() { results[i] = s.Call(ctx, c.tool, c.args) })
	}
	wg.Wait()
	for i, r := range results {
		gomega.Expect(r.IsError).To(gomega.BeFalse(), "concurrent call %d (%s) failed: %s", i+1, calls[i].tool, truncate(r.Text, 300))
		tc.ExpectSuccess(r)
	}
	creates := tc.Fake.Journal().Count(sandbox.OpCreateSandbox)
	gomega.Expect(creates).To(gomega.Equal(1),
		"%d calls sent at once without a default made %d create requests: the session must create one default and share it", len(calls), creates)
	live := tc.Fake.LiveSandboxes()
	gomega.Expect(live).To(gomega.HaveLen(1), "sandboxes running after %d concurrent implicit calls", len(calls))
	def := live[0].ID
	for _, e := range tc.journal() {
		if e.Envd {
			gomega.Expect(e.SandboxID).To(gomega.Equal(def), "a concurrent call ran in %s, not in the one default %s (%s)", e.SandboxID, def, e.Op)
		}
	}
	tc.closeSession(ctx, s, def)
	tc.expectKilledOnce(fmt.Sprintf("after the session of %d concurrent implicit calls closed", len(calls)), def)
}
