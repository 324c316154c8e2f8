package conformance

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// The cleanup family checks what a session's close destroys: every owned
// sandbox, once, and nothing else. The idle timeout and server shutdown
// close sessions too (specIdleTimeout, specShutdown).

func cleanupSpecs() []Spec {
	return []Spec{
		{ID: "cleanup.close-destroys-owned", Rules: []string{"SESSION-1", "CREATE-5", "SESSION-2"}, Tools: []string{"create_sandbox", "run_command"}, Body: specCloseDestroysOwned,
			Title: "closing a session destroys every sandbox it created, explicitly or implicitly, with one kill each"},
		{ID: "cleanup.close-spares-external", Rules: []string{"SESSION-1", "GET-6", "TIMEOUT-6", "RENEW-2"}, Tools: []string{"create_sandbox", "get_sandbox", "set_sandbox_timeout", "run_command"}, Body: specCloseSparesExternal,
			Title: "closing a session leaves alone the external sandboxes it read, set a timeout on or ran commands in"},
		{ID: "cleanup.close-spares-listed", Rules: []string{"SESSION-1", "LIST-2"}, Tools: []string{"create_sandbox", "list_sandboxes"}, Body: specCloseSparesListed,
			Title: "closing a session leaves alone the sandboxes it listed"},
		{ID: "cleanup.killed-not-destroyed-again", Rules: []string{"SESSION-1", "SESSION-3"}, Tools: []string{"create_sandbox", "kill_sandbox"}, Body: specKilledNotDestroyedAgain,
			Title: "an owned sandbox killed during the session, by ID or as the default, is not killed again at close"},
		{ID: "cleanup.concurrent-closes", Rules: []string{"SESSION-1"}, Tools: []string{"create_sandbox", "get_sandbox"}, Body: specConcurrentCloses,
			Title: "several sessions closing at once each destroy exactly their own sandboxes, and an open session keeps its own"},
		{ID: "cleanup.close-each-transport", Rules: []string{"SESSION-1"}, Tools: []string{"create_sandbox"}, Body: specCloseEachTransport,
			Title: "closing a session destroys its sandboxes over every transport the target offers (end of input, HTTP DELETE)"},
		{ID: "cleanup.close-destroy-retries", Rules: []string{"SESSION-1", "SESSION-5"}, Tools: []string{"create_sandbox"}, Body: specCloseDestroyRetries,
			Title: "when the close-time destroy meets a transient failure (500, 502, 503, 504, 429 or a connection reset) a few times, the server retries until the sandbox is destroyed"},
		{ID: "cleanup.close-destroy-unauthorized", Rules: []string{"SESSION-1", "SESSION-5"}, Tools: []string{"create_sandbox"}, Body: specCloseDestroyUnauthorized,
			Title: "when the close-time destroy is refused with 401 the server tries exactly once and reports the sandbox it could not destroy by ID in its log"},
		{ID: "cleanup.close-destroy-forbidden", Rules: []string{"SESSION-1", "SESSION-5"}, Tools: []string{"create_sandbox"}, Body: specCloseDestroyForbidden,
			Title: "when the close-time destroy is refused with 403 the server tries exactly once and reports the sandbox it could not destroy by ID in its log"},
		{ID: "cleanup.idle-timeout", Rules: []string{"SESSION-1"}, Tools: []string{"create_sandbox", "run_command"}, Body: specIdleTimeout,
			Title:    "a Streamable HTTP session that receives no request for the server's idle timeout is closed by the server: every sandbox it owned is destroyed once, and the external sandbox it used is left alone",
			Optional: "needs a Streamable HTTP session whose idle timeout the kit knows: skipped for a stdio server command"},
		signalsServer(Spec{ID: "cleanup.shutdown", Rules: []string{"SESSION-1"}, Tools: []string{"create_sandbox", "run_command"}, Body: specShutdown,
			Title: "shutting the server down (Server.Shutdown in-process, SIGTERM for a server command) destroys every sandbox its session owned, once, and leaves the external sandbox it used alone"}),
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

// The two ways a session ends that a client does not choose (SESSION-1):
// the server's idle timeout for Streamable HTTP, and the server's shutdown.

func specIdleTimeout(ctx context.Context, tc *TestContext) {
	idle, known := tc.Config.idleTimeout()
	it, ok := tc.run.target.(idleTarget)
	switch {
	case !ok:
		skipOrFail(tc, "the idle timeout applies to Streamable HTTP sessions: run the kit against a server URL (--server-url) to check it")
	case !known:
		skipOrFail(tc, "the server's idle timeout is unknown: give it with --idle-timeout (Config.IdleTimeout), as the server was started with")
	}
	conn, err := it.connectIdle(ctx, ProtocolVersion, idle)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "connect over Streamable HTTP")
	s := &Session{tc: tc, conn: conn}
	tc.track(s)
	ext := tc.seedExternal()
	own := s.mustCreate(ctx, nil)
	s.mustRun(ctx, ext)

	// From here the session sends nothing.
	limit := idle + idle/2 + tc.Config.settle()
	gone := tc.WaitFor(ctx, limit, func() bool { return !tc.live(own) })
	gomega.Expect(gone).To(gomega.BeTrue(),
		"the session sent nothing for %v (the server's idle timeout is %v), and the sandbox it owned, %s, still runs", limit, idle, own)
	tc.settle(ctx)
	tc.expectKilledOnce("after the idle timeout closed the session", own)
	tc.expectUntouched(ext, "the idle timeout")
}

func specShutdown(ctx context.Context, tc *TestContext) {
	st, ok := tc.target.(shutdownTarget)
	if !ok {
		skipOrFail(tc, "the kit can shut down only a server it runs for one session (in-process, or a stdio server command); "+
			"a server URL serves the other specs too")
	}
	conn, shutdown, err := st.connectShutdown(ctx, ProtocolVersion)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "start a server to shut down")
	s := &Session{tc: tc, conn: conn}
	tc.track(s)
	ext := tc.seedExternal()
	owned := []string{s.mustCreate(ctx, nil), s.mustCreate(ctx, map[string]any{"timeout": 900})}
	s.mustRun(ctx, ext)
	tc.Fake.Journal().Reset()

	sctx, cancel := context.WithTimeout(ctx, tc.allow(ctx, tc.Config.settle()+5*time.Second))
	defer cancel()
	gomega.Expect(shutdown(sctx)).To(gomega.Succeed(), "shut the server down")
	tc.waitGone(ctx, "after the server shut down", owned...)
	tc.settle(ctx)
	tc.expectKilledOnce("after the server shut down", owned...)
	tc.expectUntouched(ext, "the shutdown")
}

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
