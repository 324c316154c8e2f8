package conformance

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// closeDestroyFailures are passing failures of the close-time destroy: the
// sandbox must end up destroyed, with retries (SESSION-1). SESSION-5 names
// them transient: every 5xx, 429 and a connection failure; the 5xx other
// than 503 fail once, which is enough to tell a retry from none.
var closeDestroyFailures = []struct {
	name  string
	fault fakeprovider.Fault
}{
	{"503 twice", fakeprovider.Fault{Op: sandbox.OpKillSandbox, Status: http.StatusServiceUnavailable, Times: 2}},
	{"500 once", fakeprovider.Fault{Op: sandbox.OpKillSandbox, Status: http.StatusInternalServerError, Times: 1}},
	{"502 once", fakeprovider.Fault{Op: sandbox.OpKillSandbox, Status: http.StatusBadGateway, Times: 1}},
	{"504 once", fakeprovider.Fault{Op: sandbox.OpKillSandbox, Status: http.StatusGatewayTimeout, Times: 1}},
	{"429 twice", fakeprovider.Fault{Op: sandbox.OpKillSandbox, Status: http.StatusTooManyRequests, Times: 2}},
	{"connection reset twice", fakeprovider.Fault{Op: sandbox.OpKillSandbox, Reset: true, Times: 2}},
}

func cleanupFaultSpecs() []Spec {
	return []Spec{
		{
			ID:    "cleanup.close-destroy-retries",
			Rules: []string{"SESSION-1", "SESSION-5"},
			Tools: []string{"create_sandbox"},
			Title: "when the close-time destroy meets a transient failure (500, 502, 503, 504, 429 or a connection reset) " +
				"a few times, the server retries until the sandbox is destroyed",
			Body: specCloseDestroyRetries,
		},
		{
			ID:    "cleanup.close-destroy-unauthorized",
			Rules: []string{"SESSION-1", "SESSION-5"},
			Tools: []string{"create_sandbox"},
			Title: "when the close-time destroy is refused with 401 the server tries exactly once and reports the sandbox " +
				"it could not destroy by ID in its log",
			Body: specCloseDestroyUnauthorized,
		},
		{
			ID:    "cleanup.close-destroy-forbidden",
			Rules: []string{"SESSION-1", "SESSION-5"},
			Tools: []string{"create_sandbox"},
			Title: "when the close-time destroy is refused with 403 the server tries exactly once and reports the sandbox " +
				"it could not destroy by ID in its log",
			Body: specCloseDestroyForbidden,
		},
	}
}

func specCloseDestroyRetries(ctx context.Context, tc *TestContext) {
	type closing struct {
		name  string
		s     *Session
		id    string
		times int
		h     *fakeprovider.FaultHandle
	}
	var cases []closing
	var ids []string
	for _, c := range closeDestroyFailures {
		s := tc.Connect(ctx)
		id := s.mustCreate(ctx, nil)
		f := c.fault
		f.SandboxID = id
		cases = append(cases, closing{name: c.name, s: s, id: id, times: f.Times, h: tc.Fake.InjectFault(f)})
		ids = append(ids, id)
	}
	// Every session closes at once: the cases' retries overlap, and one
	// settle serves them all.
	errs := make([]error, len(cases))
	var wg sync.WaitGroup
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.s.Close(ctx)
		}()
	}
	wg.Wait()
	for i, c := range cases {
		gomega.Expect(errs[i]).NotTo(gomega.HaveOccurred(), "%s: close the session", c.name)
	}
	tc.waitGone(ctx, "after the sessions closed", ids...)
	tc.settle(ctx)
	for _, c := range cases {
		gomega.Expect(c.h.Hits()).To(gomega.Equal(c.times), "%s: the destroy met the fault %d times, want %d", c.name, c.h.Hits(), c.times)
		kills := tc.kills(c.id)
		gomega.Expect(kills).To(gomega.Equal(c.times+1),
			"%s: the close-time destroy took %d DELETE requests; want %d failed ones and one that succeeded", c.name, kills, c.times)
		c.h.Clear()
	}
}

func specCloseDestroyUnauthorized(ctx context.Context, tc *TestContext) {
	expectCloseDestroyRefused(ctx, tc, http.StatusUnauthorized)
}

func specCloseDestroyForbidden(ctx context.Context, tc *TestContext) {
	expectCloseDestroyRefused(ctx, tc, http.StatusForbidden)
}

// expectCloseDestroyRefused closes a session whose sandbox's every destroy
// the platform refuses with status, for good (SESSION-5: 401, 403): the
// server must try once, not retry, and name the sandbox in its log.
func expectCloseDestroyRefused(ctx context.Context, tc *TestContext, status int) {
	ginkgo.GinkgoHelper()
	s := tc.Connect(ctx)
	id := s.mustCreate(ctx, nil)
	h := tc.Fake.InjectFault(fakeprovider.Fault{Op: sandbox.OpKillSandbox, SandboxID: id, Status: status})
	defer h.Clear()
	// The spec makes this sandbox outlive its session on purpose: the leak
	// check leaves it out (the spec checks it is still there below).
	tc.Survives(id, fmt.Sprintf("every destroy of it is refused with %d", status))
	// A server command may exit non-zero here to say that a sandbox could
	// not be destroyed (the reference server does): that is no failure.
	_ = s.Close(ctx)
	// The server either tries once and reports, or keeps retrying: wait for
	// the report or the settle time.
	reported := tc.WaitFor(ctx, tc.Config.SettleTimeout, func() bool { return strings.Contains(tc.Logs(), id) && tc.kills(id) > 0 })
	tc.settle(ctx)
	kills := tc.kills(id)
	gomega.Expect(kills).To(gomega.Equal(1),
		"a destroy refused with %d must be tried exactly once (a retry cannot succeed and may lock the key out); the server sent %d", status, kills)
	if !reported {
		ginkgo.Fail(fmt.Sprintf("the server did not report sandbox %s, which it could not destroy, by ID in its log "+
			"(an operator must be able to destroy it by hand)", id))
	}
	gomega.Expect(tc.live(id)).To(gomega.BeTrue(), "the sandbox is gone although every destroy was refused")
}
