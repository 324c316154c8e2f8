package conformance

import (
	"context"
	"time"

	"github.com/onsi/gomega"
)

// The two ways a session ends that a client does not choose (SESSION-1):
// the server's idle timeout for Streamable HTTP, and the server's shutdown.

func cleanupEndSpecs() []Spec {
	return []Spec{
		{
			ID:    "cleanup.idle-timeout",
			Rules: []string{"SESSION-1"},
			Tools: []string{"create_sandbox", "run_command"},
			Title: "a Streamable HTTP session that receives no request for the server's idle timeout is closed by the " +
				"server: every sandbox it owned is destroyed once, and the external sandbox it used is left alone",
			Optional: "needs a Streamable HTTP session whose idle timeout the kit knows: skipped for a stdio server command",
			Body:     specIdleTimeout,
		},
		signalsServer(Spec{
			ID:    "cleanup.shutdown",
			Rules: []string{"SESSION-1"},
			Tools: []string{"create_sandbox", "run_command"},
			Title: "shutting the server down (Server.Shutdown in-process, SIGTERM for a server command) destroys every " +
				"sandbox its session owned, once, and leaves the external sandbox it used alone",
			Body: specShutdown,
		}),
	}
}

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
