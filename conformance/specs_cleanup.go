package conformance

import (
	"context"
	"fmt"
	"net/url"
	"sync"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// The cleanup family checks what a session's close destroys: every owned
// sandbox, once, and nothing else. The idle timeout and server shutdown
// close sessions too: specs_cleanup_ends.go drives them.

func cleanupSpecs() []Spec {
	return []Spec{
		{
			ID:    "cleanup.close-destroys-owned",
			Rules: []string{"SESSION-1", "CREATE-5", "SESSION-2"},
			Tools: []string{"create_sandbox", "run_command"},
			Title: "closing a session destroys every sandbox it created, explicitly or implicitly, with one kill each",
			Body:  specCloseDestroysOwned,
		},
		{
			ID:    "cleanup.close-spares-external",
			Rules: []string{"SESSION-1", "GET-6", "TIMEOUT-6", "RENEW-2"},
			Tools: []string{"create_sandbox", "get_sandbox", "set_sandbox_timeout", "run_command"},
			Title: "closing a session leaves alone the external sandboxes it read, set a timeout on or ran commands in",
			Body:  specCloseSparesExternal,
		},
		{
			ID:    "cleanup.close-spares-listed",
			Rules: []string{"SESSION-1", "LIST-2"},
			Tools: []string{"create_sandbox", "list_sandboxes"},
			Title: "closing a session leaves alone the sandboxes it listed",
			Body:  specCloseSparesListed,
		},
		{
			ID:    "cleanup.killed-not-destroyed-again",
			Rules: []string{"SESSION-1", "SESSION-3"},
			Tools: []string{"create_sandbox", "kill_sandbox"},
			Title: "an owned sandbox killed during the session, by ID or as the default, is not killed again at close",
			Body:  specKilledNotDestroyedAgain,
		},
		{
			ID:    "cleanup.concurrent-closes",
			Rules: []string{"SESSION-1"},
			Tools: []string{"create_sandbox", "get_sandbox"},
			Title: "several sessions closing at once each destroy exactly their own sandboxes, and an open session keeps its own",
			Body:  specConcurrentCloses,
		},
		{
			ID:    "cleanup.close-each-transport",
			Rules: []string{"SESSION-1"},
			Tools: []string{"create_sandbox"},
			Title: "closing a session destroys its sandboxes over every transport the target offers (end of input, HTTP DELETE)",
			Body:  specCloseEachTransport,
		},
	}
}

// expectKilledOnce asserts that each sandbox is gone and was killed
// exactly once.
func (tc *TestContext) expectKilledOnce(why string, ids ...string) {
	ginkgo.GinkgoHelper()
	for _, id := range ids {
		gomega.Expect(tc.live(id)).To(gomega.BeFalse(), "%s: sandbox %s still exists", why, id)
		gomega.Expect(tc.kills(id)).To(gomega.Equal(1), "%s: DELETE /sandboxes/%s requests", why, id)
	}
}

func specCloseDestroysOwned(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	s.mustRun(ctx, "") // creates the default implicitly
	live := tc.Fake.LiveSandboxes()
	gomega.Expect(live).To(gomega.HaveLen(1), "run_command without a default creates one sandbox")
	implicit := live[0].ID
	a := s.mustCreate(ctx, nil)
	b := s.mustCreate(ctx, map[string]any{"timeout": 3600})
	owned := []string{implicit, a, b}
	records := tc.Fake.LiveSandboxes()
	tc.Fake.Journal().Reset()

	tc.closeSession(ctx, s, owned...)
	tc.expectKilledOnce("after the session closed", owned...)
	gomega.Expect(tc.Fake.LiveCount()).To(gomega.BeZero())
	for _, e := range tc.journal() {
		if searchesForNoneOf(e, records) {
			// A list filtered by metadata that none of these sandboxes
			// carries: a server shared by the run looking for what an
			// earlier spec's failed create left (LOST-1), not this close.
			continue
		}
		gomega.Expect(e.Envd).To(gomega.BeFalse(), "the close called a sandbox's daemon (%s)", e.Op)
		gomega.Expect([]string{sandbox.OpKillSandbox, sandbox.OpGetSandbox}).To(gomega.ContainElement(e.Op),
			"the close made a %s request: it only destroys", e.Op)
		if e.Op == sandbox.OpKillSandbox {
			gomega.Expect(owned).To(gomega.ContainElement(e.SandboxID), "the close destroyed a sandbox the session did not own")
		}
	}
}

// searchesForNoneOf reports whether e is a list filtered by metadata that
// matches none of records: the search of another spec's sandbox.
func searchesForNoneOf(e fakeprovider.Entry, records []fakeprovider.SandboxRecord) bool {
	filter := e.Query.Get("metadata")
	if e.SandboxID != "" || filter == "" {
		return false
	}
	want, err := url.ParseQuery(filter)
	if err != nil {
		return false
	}
	for _, r := range records {
		if metadataMatches(r.Metadata, want) {
			return false
		}
	}
	return true
}

// metadataMatches reports whether md holds every key and value of want.
func metadataMatches(md map[string]string, want url.Values) bool {
	for k := range want {
		if md[k] != want.Get(k) {
			return false
		}
	}
	return true
}

func specCloseSparesExternal(ctx context.Context, tc *TestContext) {
	read, timed, ran := tc.seedExternal(), tc.seedExternal(), tc.seedExternal()
	s := tc.Connect(ctx)
	own := s.mustCreate(ctx, nil)
	s.mustGet(ctx, read)
	tc.ExpectSuccess(s.Call(ctx, "set_sandbox_timeout", map[string]any{"sandbox_id": timed, "timeout": 600}))
	s.mustRun(ctx, ran)
	tc.Fake.Journal().Reset()

	tc.closeSession(ctx, s, own)
	tc.expectKilledOnce("the owned sandbox", own)
	for _, ext := range []string{read, timed, ran} {
		tc.expectUntouched(ext, "closing the session")
		gomega.Expect(tc.journalFor(ext)).To(gomega.BeEmpty(), "the close made requests for external sandbox %s", ext)
	}
}

func specCloseSparesListed(ctx context.Context, tc *TestContext) {
	seeded := []string{tc.seedExternal(), tc.seedExternal(), tc.seedExternal()}
	s := tc.Connect(ctx)
	r := tc.ExpectSuccess(s.Call(ctx, "list_sandboxes", map[string]any{}))
	gomega.Expect(listedIDs(r)).To(gomega.ConsistOf(seeded))
	own := s.mustCreate(ctx, nil)
	r = tc.ExpectSuccess(s.Call(ctx, "list_sandboxes", map[string]any{"limit": 10}))
	gomega.Expect(listedIDs(r)).To(gomega.ConsistOf(append(seeded, own)))

	tc.closeSession(ctx, s, own)
	tc.expectKilledOnce("the owned sandbox", own)
	for _, id := range seeded {
		tc.expectUntouched(id, "closing a session that listed it")
	}
}

func specKilledNotDestroyedAgain(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	byID := s.mustCreate(ctx, nil)
	kept := s.mustCreate(ctx, nil)
	def := s.mustCreate(ctx, nil)
	tc.ExpectSuccess(s.Call(ctx, "kill_sandbox", map[string]any{"sandbox_id": byID}))
	r := tc.ExpectSuccess(s.Call(ctx, "kill_sandbox", map[string]any{}))
	gomega.Expect(r.String("sandbox_id")).To(gomega.Equal(def))
	tc.expectKilledOnce("kill_sandbox", byID, def)

	tc.closeSession(ctx, s, kept)
	tc.expectKilledOnce("after the session closed", byID, def, kept)
}

func specConcurrentCloses(ctx context.Context, tc *TestContext) {
	const n = 4
	keeper := tc.Connect(ctx)
	kept := keeper.mustCreate(ctx, nil)
	sessions := make([]*Session, n)
	owned := make([][]string, n)
	for i := range sessions {
		sessions[i] = tc.Connect(ctx)
		owned[i] = []string{(sessions[i]).mustCreate(ctx, nil), (sessions[i]).mustCreate(ctx, nil)}
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Close(ctx)
		}()
	}
	wg.Wait()
	var all []string
	for i := range sessions {
		gomega.Expect(errs[i]).NotTo(gomega.HaveOccurred(), "close session %d", i)
		all = append(all, owned[i]...)
	}
	tc.waitGone(ctx, "after the sessions closed", all...)
	tc.settle(ctx)
	tc.expectKilledOnce("concurrent closes", all...)
	gomega.Expect(tc.live(kept)).To(gomega.BeTrue(), "closing other sessions destroyed the open session's sandbox")
	gomega.Expect(tc.kills(kept)).To(gomega.BeZero())
	keeper.expectDefault(ctx, kept, "the open session after the others closed")
}

func specCloseEachTransport(ctx context.Context, tc *TestContext) {
	type way struct {
		name string
		open func() *Session
	}
	primary := map[TargetKind]string{
		TargetInProcess: "in-memory connection closed",
		TargetStdio:     "stdio end of input",
		TargetHTTP:      "HTTP DELETE",
	}[tc.Kind()]
	ways := []way{{primary, func() *Session { return tc.Connect(ctx) }}}
	if alt, ok := tc.run.target.(alternateTarget); ok {
		ways = append(ways, way{"HTTP DELETE (Streamable HTTP)", func() *Session {
			conn, err := alt.connectAlternate(ctx, ProtocolVersion)
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), "connect over Streamable HTTP")
			s := &Session{tc: tc, conn: conn}
			tc.track(s)
			return s
		}})
	}
	for _, w := range ways {
		s := w.open()
		ids := []string{s.mustCreate(ctx, nil), s.mustCreate(ctx, nil)}
		tc.closeSession(ctx, s, ids...)
		tc.expectKilledOnce(fmt.Sprintf("after a close by %s", w.name), ids...)
	}
}
