package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// shutdownCallsPerSession is how many calls each session of the HTTP
// shutdown spec has in flight when the server shuts down.
const shutdownCallsPerSession = 2

func shutdownHTTPSpecs() []Spec {
	return []Spec{{ID: "cleanup.shutdown-answers-http-calls", Rules: []string{"SESSION-1"}, Tools: []string{"create_sandbox", "run_command"}, Body: specShutdownAnswersHTTPCalls,
		Title:    "shutting down a server with calls in flight on two Streamable HTTP sessions answers every call (a result or a JSON-RPC error, never a cut stream), then destroys every sandbox the sessions owned, once",
		Optional: "shuts down a server it serves over HTTP itself: runs only against the in-process reference server"}, signalsServer(Spec{ID: "cleanup.shutdown-answers-stdio-calls", Rules: []string{"SESSION-1"}, Tools: []string{"create_sandbox", "run_command"}, Body: specShutdownAnswersStdioCalls,
		Title: "sending SIGTERM to a stdio server with calls in flight answers every call (a result or a JSON-RPC error, never stdout closed without it), then destroys every sandbox the session owned, once"})}
}

// signalsServer marks s as a spec that shuts the server down with SIGTERM:
// it runs against a process the kit starts, where the run can start one
// (Process), and, since a server URL serves the other specs too and is
// never shut down, it is left out of the required lists (Optional).
func signalsServer(s Spec) Spec {
	s.Process = true
	s.Optional = "shuts the server down (SIGTERM to a process the kit starts; the default run starts one): " +
		"skipped for a server URL, which serves the other specs too"
	return s
}

func specShutdownAnswersHTTPCalls(ctx context.Context, tc *TestContext) {
	st, ok := tc.run.target.(httpShutdownTarget)
	if !ok {
		// Not a failure with RequireAll: the kit can shut down a server
		// command only through stdio, and a server URL serves the others.
		ginkgo.Skip("the HTTP shutdown spec needs a server the kit serves over Streamable HTTP and can shut down: the in-process reference server")
	}
	endpoint, shutdown, err := st.httpShutdownServer()
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "start a server to shut down")
	var sessions []*Session
	var owned []string
	for range 2 {
		conn, err := connectHTTP(ctx, endpoint, ProtocolVersion)
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "open a Streamable HTTP session")
		s := &Session{tc: tc, conn: conn}
		tc.track(s)
		sessions = append(sessions, s)
		owned = append(owned, s.mustCreate(ctx, nil))
	}
	// Every call hangs at the provider until the shutdown cancels it: the
	// calls are in flight at the server when it shuts down.
	var hangs []*fakeprovider.FaultHandle
	for _, id := range owned {
		h := tc.Fake.InjectFault(fakeprovider.Fault{Op: sandbox.OpProcessStart, SandboxID: id, Hang: true})
		defer h.Clear()
		hangs = append(hangs, h)
	}
	results := startCallsInFlight(ctx, sessions, owned)
	shutdownWithCallsInFlight(ctx, tc, hangs, results, owned, shutdown)
}

// specShutdownAnswersStdioCalls is the stdio sibling of the HTTP spec: the
// shutdown is SIGTERM to the server process (SESSION-1).
func specShutdownAnswersStdioCalls(ctx context.Context, tc *TestContext) {
	st, ok := tc.target.(*stdioTarget)
	if !ok {
		ginkgo.Skip("the stdio shutdown spec needs a stdio server command (--server-cmd without --server-url): the kit sends it SIGTERM")
	}
	cs, cmd, tr, err := st.startSession(ctx, ProtocolVersion)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "start the server command")
	s := &Session{tc: tc, conn: &clientConn{cs: cs, ending: tr.ended}}
	tc.track(s)
	owned := []string{s.mustCreate(ctx, nil)}
	h := tc.Fake.InjectFault(fakeprovider.Fault{Op: sandbox.OpProcessStart, SandboxID: owned[0], Hang: true})
	defer h.Clear()
	results := startCallsInFlight(ctx, []*Session{s}, owned)
	shutdownWithCallsInFlight(ctx, tc, []*fakeprovider.FaultHandle{h}, results, owned, func(context.Context) error {
		return cmd.Process.Signal(syscall.SIGTERM)
	})
}

// shutdownWithCallsInFlight waits until every call is held at the
// provider, shuts the server down, and checks that every call is answered
// and then every owned sandbox destroyed, once (SESSION-1).
func shutdownWithCallsInFlight(ctx context.Context, tc *TestContext, hangs []*fakeprovider.FaultHandle,
	results <-chan inFlightResult, owned []string, shutdown func(context.Context) error) {
	ginkgo.GinkgoHelper()
	want := len(owned) * shutdownCallsPerSession
	reached := tc.WaitFor(ctx, 5*time.Second, func() bool {
		n := 0
		for _, h := range hangs {
			n += h.InFlight()
		}
		return n == want
	})
	gomega.Expect(reached).To(gomega.BeTrue(), "the %d run_command calls never all reached the provider", want)
	tc.Fake.Journal().Reset()

	sctx, cancel := context.WithTimeout(ctx, tc.allow(ctx, tc.Config.settle()+5*time.Second))
	defer cancel()
	gomega.Expect(shutdown(sctx)).To(gomega.Succeed(), "shut the server down")
	for range want {
		var r inFlightResult
		select {
		case r = <-results:
		case <-time.After(tc.allow(ctx, tc.Config.CallTimeout)):
			ginkgo.Fail("a call in flight at shutdown was neither answered nor ended")
		}
		expectAnswered(r)
	}
	tc.waitGone(ctx, "after the server shut down with calls in flight", owned...)
	tc.settle(ctx)
	tc.expectKilledOnce("after the server shut down with calls in flight", owned...)
}

// inFlightResult is what one call in flight at shutdown got.
type inFlightResult struct {
	session int
	result  *Result
}

// startCallsInFlight starts shutdownCallsPerSession run_command calls on
// each session, on its own sandbox, and returns where their results go.
func startCallsInFlight(ctx context.Context, sessions []*Session, owned []string) <-chan inFlightResult {
	results := make(chan inFlightResult, len(sessions)*shutdownCallsPerSession)
	var started sync.WaitGroup
	for i, s := range sessions {
		for range shutdownCallsPerSession {
			started.Add(1)
			go func() {
				defer ginkgo.GinkgoRecover()
				started.Done()
				results <- inFlightResult{session: i + 1, result: s.Call(ctx, "run_command", map[string]any{"command": "echo in flight", "sandbox_id": owned[i]})}
			}()
		}
	}
	started.Wait()
	return results
}

// expectAnswered asserts that a call in flight at shutdown got an answer:
// a tool result, or a JSON-RPC error response, not a cut stream.
func expectAnswered(r inFlightResult) {
	ginkgo.GinkgoHelper()
	var werr *jsonrpc.Error
	if err := r.result.Err; err != nil && !errors.As(err, &werr) {
		ginkgo.Fail(fmt.Sprintf("session %d: a run_command in flight when the server shut down got no answer: %v "+
			"(SESSION-1: a call in flight at shutdown is answered before its session ends)", r.session, err))
	}
}
