package server

import (
	"log/slog"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// capsHarness is an httpCaps on a fake clock that records evictions.
type capsHarness struct {
	caps    *httpCaps
	now     time.Time
	mu      sync.Mutex
	evicted []uint64
	seq     uint64
}

func newCapsHarness() *capsHarness {
	h := &capsHarness{now: time.Unix(1_800_000_000, 0)}
	h.caps = newHTTPCaps(func() time.Time { return h.now }, slog.New(slog.DiscardHandler), func(s *session) {
		h.mu.Lock()
		h.evicted = append(h.evicted, s.seq)
		h.mu.Unlock()
	})
	return h
}

// open reserves and binds a session of client, as a new HTTP session does;
// it reports false when the caps refused it.
func (h *capsHarness) open(client string, total int) (uint64, bool) {
	if ok, _ := h.caps.reserve(client, total, 0, time.Minute); !ok {
		return 0, false
	}
	h.seq++
	id := "sid-" + itoa(int(h.seq))
	h.caps.add(id, newSession(h.seq))
	h.caps.release(client)
	h.caps.bind(id, client)
	h.now = h.now.Add(time.Second)
	return h.seq, true
}

// TestFullServerEvictsFromTheLargestHolder is the lockout repro in small:
// a few clients keep every session busy (none idle for EvictIdle), and a
// new client still gets a session, by closing one of the client holding
// the most, never one with a call in flight (QUOTA-2, QUOTA-3).
func TestFullServerEvictsFromTheLargestHolder(t *testing.T) {
	h := newCapsHarness()
	const total = 4
	a1, _ := h.open("A", total)
	a2, _ := h.open("A", total)
	a3, _ := h.open("A", total)
	if _, ok := h.open("B", total); !ok {
		t.Fatal("B refused below the cap")
	}
	busy := h.caps.active("sid-" + itoa(int(a1))) // a1 has a call in flight, and is the oldest
	defer busy()
	h.caps.active("sid-" + itoa(int(a3)))() // a3 was active just now
	if _, ok := h.open("C", total); !ok {
		t.Fatal("a new client is locked out of a full server whose sessions are all busy")
	}
	if !slices.Equal(h.evicted, []uint64{a2}) {
		t.Fatalf("evicted %v, want [%d]: the largest holder's session idle longest without a call in flight", h.evicted, a2)
	}
	// A holds 2 now, B and C 1 each: the largest holder still gives way.
	if _, ok := h.open("D", total); !ok {
		t.Fatal("a second new client is locked out")
	}
	if len(h.evicted) != 2 || h.evicted[1] != a3 {
		t.Fatalf("evicted %v, want a3 (%d) next: a1 has a call in flight", h.evicted, a3)
	}
	// Every client holds one now, and A's has a call in flight: a client
	// already holding as many as anyone gets no one else's session.
	if _, ok := h.open("B", total); ok {
		t.Errorf("B, holding as many as anyone, took another client's session: evicted %v", h.evicted)
	}
	if _, ok := h.open("E", total); !ok {
		t.Errorf("E refused though B, C and D hold idle sessions")
	}
	if slices.Contains(h.evicted, a1) {
		t.Errorf("a session with a call in flight was evicted: %v", h.evicted)
	}
}

// TestSessionKeyByPrincipal: an authenticated principal's sessions count
// against the principal from every address; an anonymous caller's against
// its address.
func TestSessionKeyByPrincipal(t *testing.T) {
	o := HTTPOptions{MaxSessionsPerClient: 7, MaxSessionsPerPrincipal: 9}
	r1 := httptest.NewRequest("POST", "/mcp", nil)
	r1.RemoteAddr = "10.0.0.1:1234"
	r1.Header.Set(principalHeader, "alice")
	r2 := httptest.NewRequest("POST", "/mcp", nil)
	r2.RemoteAddr = "10.0.0.2:1234"
	r2.Header.Set(principalHeader, "alice")
	k1, l1, p1 := sessionKey(r1, o)
	k2, _, _ := sessionKey(r2, o)
	if k1 != k2 || l1 != 9 || !p1 {
		t.Errorf("alice from two addresses: keys %q, %q, limit %d", k1, k2, l1)
	}
	anon := httptest.NewRequest("POST", "/mcp", nil)
	anon.RemoteAddr = "10.0.0.1:1234"
	anon.Header.Set(principalHeader, LocalPrincipal)
	if k, l, p := sessionKey(anon, o); k == k1 || l != 7 || p {
		t.Errorf("anonymous caller: key %q limit %d principal %v", k, l, p)
	}
}

// TestCreatesPerPrincipal: one principal's creates in flight are capped
// across its sessions; the one beyond is a rate_limited tool error that
// makes no provider call, and a create is admitted again once one ends.
func TestCreatesPerPrincipal(t *testing.T) {
	h := newHarness(t, &harnessOptions{limits: Limits{CreatesPerPrincipal: 2}})
	held := h.fp.InjectFault(fakeprovider.Fault{Op: sandbox.OpCreateSandbox, Hang: true, Times: 2})
	a, b, c := h.connect(), h.connect(), h.connect()
	var wg sync.WaitGroup
	for _, cl := range []*client{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if res, err := cl.callErr("create_sandbox", nil); err != nil || res.IsError {
				t.Errorf("a held create failed: %v", err)
			}
		}()
	}
	waitFor(t, "two creates held at the provider", func() bool { return held.InFlight() == 2 })
	e := c.fail("create_sandbox", nil)
	if e.Category != sandbox.RateLimited || e.Code != codeTooManyCreates {
		t.Errorf("third create: %+v, want rate_limited %s", e, codeTooManyCreates)
	}
	if n := len(h.fp.Journal().Calls(sandbox.OpCreateSandbox)); n != 2 {
		t.Errorf("%d create requests, want 2: the refused one must make none", n)
	}
	held.Release()
	wg.Wait()
	c.ok("create_sandbox", nil)
}
