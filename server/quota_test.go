package server

import (
	"net/http"
	"sync"
	"testing"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// twoPrincipals serves h over HTTP with the tokens of alice and bob and
// returns a client factory for each era.
func twoPrincipals(t *testing.T, h *harness) (legacy, modern func(who string) *client) {
	t.Helper()
	tokens := map[string]string{"token-of-alice-123": "alice", "token-of-bob-4567": "bob"}
	ts := serveHTTP(t, h, &HTTPOptions{Tokens: tokens})
	header := func(who string) http.Header {
		for tok, p := range tokens {
			if p == who {
				return http.Header{"Authorization": {"Bearer " + tok}}
			}
		}
		t.Fatalf("no token for %s", who)
		return nil
	}
	legacy = func(who string) *client { return connectHTTP(t, h, ts.URL, httpClient(t, header(who))) }
	modern = func(who string) *client { return connectModernHTTP(t, h, ts.URL, httpClient(t, header(who))) }
	return legacy, modern
}

// wantLiveCap checks that e is the answer of a create beyond the per-principal cap.
func wantLiveCap(t *testing.T, what string, e ToolError) {
	t.Helper()
	if e.Category != sandbox.RateLimited || e.Code != codeTooManySandboxes {
		t.Errorf("%s: %+v, want rate_limited %s", what, e, codeTooManySandboxes)
	}
}

// TestSandboxesPerPrincipal: alice's owned sandboxes (2025 sessions) and
// leased ones (2026-07-28 requests) count together against her cap; at the
// cap every kind of create of hers is refused without a provider call,
// bob's are not, and a kill (or a session's end) makes room again.
func TestSandboxesPerPrincipal(t *testing.T) {
	h := newHarness(t, &harnessOptions{limits: Limits{SandboxesPerPrincipal: 3}})
	legacy, modern := twoPrincipals(t, h)
	creates := func() int { return len(h.fp.Journal().Calls(sandbox.OpCreateSandbox)) }

	a1, a2 := legacy("alice"), legacy("alice")
	a1.ok("create_sandbox", nil)
	a2.ok("create_sandbox", nil)
	am := modern("alice")
	leased := am.ok("create_sandbox", nil)["sandbox_id"]
	before := creates()
	wantLiveCap(t, "alice's 2025 create at her cap", a1.fail("create_sandbox", nil))
	wantLiveCap(t, "alice's 2026-07-28 create at her cap", am.fail("create_sandbox", nil))
	wantLiveCap(t, "alice's implicit create at her cap", legacy("alice").fail("run_command", map[string]any{"command": "true"}))
	if n := creates() - before; n != 0 {
		t.Errorf("%d create requests for refused creates, want 0", n)
	}

	b := legacy("bob")
	b.ok("create_sandbox", nil)
	b.ok("create_sandbox", nil)
	modern("bob").ok("create_sandbox", nil) // bob's 3 do not count against alice, nor hers against him

	am.ok("kill_sandbox", map[string]any{"sandbox_id": leased})
	a1.ok("create_sandbox", nil) // a leased kill made room
	wantLiveCap(t, "alice at her cap again", am.fail("create_sandbox", nil))
	_ = a1.cs.Close() // an HTTP DELETE: the session ends and its sandboxes go
	waitFor(t, "alice's first session ended", func() bool { return h.srv.reg.ownedBy("alice") == 1 })
	am.ok("create_sandbox", nil) // a session's end made room
}

// TestSandboxesPerPrincipalConcurrent: creates racing at the cap, in both
// eras, never leave the principal more live sandboxes than the cap.
func TestSandboxesPerPrincipalConcurrent(t *testing.T) {
	const limit = 3
	h := newHarness(t, &harnessOptions{limits: Limits{SandboxesPerPrincipal: limit}})
	legacy, modern := twoPrincipals(t, h)
	clients := []*client{legacy("alice"), legacy("alice"), legacy("alice"), modern("alice"), modern("alice"), modern("alice")}
	var (
		wg sync.WaitGroup
		mu sync.Mutex
		ok int
	)
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.callErr("create_sandbox", nil)
			if err != nil {
				t.Errorf("create: %v", err)
				return
			}
			if !res.IsError {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ok < 1 || ok > limit {
		t.Errorf("%d creates succeeded at once, want 1 to %d", ok, limit)
	}
	if n := len(h.fp.Journal().Calls(sandbox.OpCreateSandbox)); n != ok {
		t.Errorf("%d create requests for %d successes: a refused create must make none", n, ok)
	}
}

// TestSandboxesPerPrincipalListFails: when the platform cannot count a
// principal's leased sandboxes the create is refused with the platform's
// category, and no create request is made: the cap fails closed.
func TestSandboxesPerPrincipalListFails(t *testing.T) {
	h := newHarness(t, &harnessOptions{limits: Limits{SandboxesPerPrincipal: 3}})
	legacy, _ := twoPrincipals(t, h)
	h.fp.InjectFault(fakeprovider.Fault{Op: sandbox.OpListSandboxes, Status: http.StatusServiceUnavailable, Times: 1})
	a := legacy("alice")
	if e := a.fail("create_sandbox", nil); e.Category != sandbox.Unavailable {
		t.Errorf("create while the count fails: %+v, want unavailable", e)
	}
	if n := len(h.fp.Journal().Calls(sandbox.OpCreateSandbox)); n != 0 {
		t.Errorf("%d create requests, want 0", n)
	}
	a.ok("create_sandbox", nil)
}
