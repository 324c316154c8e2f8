package conformance

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

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

func defaultConcurrentSpecs() []Spec {
	return []Spec{
		{
			ID:    "default.concurrent-implicit-create",
			Rules: []string{"SESSION-2", "SESSION-1"},
			Tools: []string{"run_command"},
			Title: "data-plane calls sent at once without sandbox_id and without a default create exactly one sandbox, " +
				"all run in it, and the close destroys it once",
			Body: specConcurrentImplicitCreate,
		},
	}
}

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
