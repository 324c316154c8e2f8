package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// TestDestroyRetriedThroughOutage: close-time destroys that fail while the
// provider is down are retried with backoff until they succeed, and the
// failures are logged without the provider's message.
func TestDestroyRetriedThroughOutage(t *testing.T) {
	h := newHarness(t, &harnessOptions{limits: Limits{DestroyRetryFor: 30 * time.Second}})
	c := h.connect()
	for range 3 {
		c.ok("create_sandbox", nil)
	}
	outage := h.fp.InjectFault(fakeprovider.Fault{Op: sandbox.OpKillSandbox, Status: 503, Times: 5})
	c.close() // waits for the destroys, retries included
	if got := h.fp.LiveCount(); got != 0 {
		t.Errorf("%d sandboxes alive after the outage", got)
	}
	if got := outage.Hits(); got != 5 {
		t.Errorf("outage hit %d destroys, want 5", got)
	}
	if got := h.fp.Journal().Count(sandbox.OpKillSandbox); got != 8 {
		t.Errorf("%d destroy requests, want 3 plus 5 retries", got)
	}
	logs := h.logs.String()
	if !strings.Contains(logs, `"msg":"sandbox destroy failed; retrying"`) || !strings.Contains(logs, `"category":"unavailable"`) {
		t.Errorf("retries not logged:\n%s", logs)
	}
	if u := h.srv.Unresolved(); len(u) != 0 {
		t.Errorf("unresolved %+v", u)
	}
}

// TestDestroyGivesUpAndReports: a destroy that keeps failing is given up
// after Limits.DestroyRetryFor; the sandbox is logged at error level with
// its ID, listed by Unresolved, and reported by Shutdown: never forgotten
// silently.
func TestDestroyGivesUpAndReports(t *testing.T) {
	for _, tc := range []struct {
		name     string
		status   int
		category sandbox.Category
		attempts func(int) bool
	}{
		{"outage outlasts the retries", 503, sandbox.Unavailable, func(n int) bool { return n >= 2 }},
		{"refused credentials are not retried", 401, sandbox.Unauthenticated, func(n int) bool { return n == 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, &harnessOptions{limits: Limits{DestroyRetryFor: time.Second}, unresolved: true})
			c := h.connect()
			id := c.ok("create_sandbox", nil)["sandbox_id"].(string)
			h.fp.InjectFault(fakeprovider.Fault{Op: sandbox.OpKillSandbox, Status: tc.status})
			c.close()
			if _, ok := h.fp.Sandbox(id); !ok {
				t.Fatal("the sandbox was destroyed despite the fault")
			}
			u := h.srv.Unresolved()
			if len(u) != 1 || u[0].SandboxID != id || u[0].Category != tc.category || !tc.attempts(u[0].Attempts) || u[0].Session == 0 {
				t.Fatalf("unresolved %+v, want %s with category %s", u, id, tc.category)
			}
			if !strings.Contains(h.logs.String(), `"msg":"sandbox NOT destroyed: destroy it by hand"`) ||
				!strings.Contains(h.logs.String(), `"sandbox_id":"`+id+`"`) {
				t.Errorf("not reported in the log:\n%s", h.logs.String())
			}
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			if err := h.srv.Shutdown(ctx); err == nil || !strings.Contains(err.Error(), "1 sandboxes could not be destroyed") {
				t.Errorf("Shutdown: %v", err)
			}
			h.fp.ClearFaults()
		})
	}
}

// TestShutdownAbandonsRetries: when shutdown's deadline passes while
// destroys are still being retried, they stop, are reported, and Shutdown
// says how many were unfinished.
func TestShutdownAbandonsRetries(t *testing.T) {
	h := newHarness(t, &harnessOptions{limits: Limits{DestroyRetryFor: time.Hour}, unresolved: true})
	c := h.connect()
	id := c.ok("create_sandbox", nil)["sandbox_id"].(string)
	h.fp.InjectFault(fakeprovider.Fault{Op: sandbox.OpKillSandbox, Status: 502})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err := h.srv.Shutdown(ctx)
	if err == nil || !strings.Contains(err.Error(), "1 sandbox destroys unfinished") {
		t.Errorf("Shutdown: %v", err)
	}
	waitFor(t, "the abandoned destroy reported", func() bool { return len(h.srv.Unresolved()) == 1 })
	if u := h.srv.Unresolved(); u[0].SandboxID != id || u[0].Category != sandbox.Unavailable {
		t.Errorf("unresolved %+v", u)
	}
	// The retry goroutine has returned: cleanups are idle.
	wctx, wcancel := context.WithTimeout(context.Background(), hangGuard)
	defer wcancel()
	if err := h.srv.reg.cleanups.wait(wctx); err != nil {
		t.Errorf("cleanups still running: %v", err)
	}
	h.fp.ClearFaults()
}

// lostAnswerTransport performs a create request, then drops its answer, as
// a connection that fails after the provider acted would.
type lostAnswerTransport struct {
	next http.RoundTripper
	lose atomic.Bool
}

func (l *lostAnswerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(r)
	if err != nil || r.Method != http.MethodPost || r.URL.Path != "/sandboxes" || !l.lose.Load() {
		return resp, err
	}
	resp.Body.Close()
	return nil, syscall.ECONNRESET
}

// TestLostCreateIsFound: a create whose answer is lost after the provider
// created the sandbox is a tool error, and the sandbox it left is found by
// its create tag and destroyed: it is never left running unowned.
func TestLostCreateIsFound(t *testing.T) {
	lost := &lostAnswerTransport{}
	h := newHarness(t, &harnessOptions{transport: func(rt http.RoundTripper) http.RoundTripper {
		lost.next = rt
		return lost
	}})
	c := h.connect()
	lost.lose.Store(true)
	if e := c.fail("create_sandbox", nil); e.Category != sandbox.Unavailable {
		t.Errorf("category %s, want unavailable", e.Category)
	}
	lost.lose.Store(false)
	waitFor(t, "the left sandbox destroyed", func() bool { return h.fp.LiveCount() == 0 })
	lists := h.fp.Journal().Calls(sandbox.OpListSandboxes)
	if len(lists) != 1 || !strings.Contains(lists[0].Query.Get("metadata"), CreateTagKey+"=") {
		t.Errorf("create check lists %+v", lists)
	}
	// The create's entry gets its body when the fake's handler ends, which
	// may come after the transport dropped the answer and the check ran.
	waitFor(t, "the create's journal entry", func() bool {
		creates := h.fp.Journal().Calls(sandbox.OpCreateSandbox)
		return len(creates) != 1 || len(creates[0].Body) > 0
	})
	creates := h.fp.Journal().Calls(sandbox.OpCreateSandbox)
	if len(creates) != 1 || !strings.Contains(string(creates[0].Body), `"`+CreateTagKey+`"`) {
		t.Errorf("create not tagged: %+v", creates)
	}
	if !strings.Contains(h.logs.String(), "lost create left a sandbox; destroying it") {
		t.Errorf("not logged:\n%s", h.logs.String())
	}
	// The session is unaffected: no default was set.
	if e := c.fail("get_sandbox", nil); e.Code != codeNoDefault {
		t.Errorf("get_sandbox: %+v", e)
	}
}

// TestLostCreateReported: when the provider stays down after a create
// without an answer, the unknown outcome is reported with the tag to look
// for.
func TestLostCreateReported(t *testing.T) {
	h := newHarness(t, &harnessOptions{limits: Limits{DestroyRetryFor: 500 * time.Millisecond}, unresolved: true})
	c := h.connect()
	h.fp.InjectFault(fakeprovider.Fault{Status: 503})
	if e := c.fail("create_sandbox", nil); e.Category != sandbox.Unavailable || e.HTTPStatus != 503 {
		t.Errorf("create: %+v", e)
	}
	c.close()
	u := h.srv.Unresolved()
	if len(u) != 1 || u[0].SandboxID != "" || len(u[0].CreateTag) != 24 {
		t.Fatalf("unresolved %+v", u)
	}
	if !strings.Contains(h.logs.String(), `"metadata":"`+CreateTagKey+"="+u[0].CreateTag+`"`) {
		t.Errorf("tag not logged:\n%s", h.logs.String())
	}
	h.fp.ClearFaults()
}

// TestAmbiguousCreate: which failed creates may have left a sandbox.
func TestAmbiguousCreate(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&sandbox.Error{Op: sandbox.OpCreateSandbox, Category: sandbox.Timeout}, true},
		{&sandbox.Error{Op: sandbox.OpCreateSandbox, Category: sandbox.Unavailable}, true},
		{&sandbox.Error{Op: sandbox.OpCreateSandbox, Category: sandbox.Unavailable, HTTPStatus: 503}, true},
		{&sandbox.Error{Op: sandbox.OpCreateSandbox, Category: sandbox.ProviderError, HTTPStatus: 201, Code: "malformed_response"}, true},
		{&sandbox.Error{Op: sandbox.OpCreateSandbox, Category: sandbox.RateLimited, HTTPStatus: 429}, false},
		{&sandbox.Error{Op: sandbox.OpCreateSandbox, Category: sandbox.InvalidArgument, HTTPStatus: 400}, false},
		{&sandbox.Error{Op: sandbox.OpCreateSandbox, Category: sandbox.InvalidArgument, Field: "cpu"}, false},
		{errors.New("other"), true},
	} {
		if got := ambiguousCreate(tc.err); got != tc.want {
			t.Errorf("ambiguousCreate(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
