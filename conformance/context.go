package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// TestContext is what one spec drives: a fresh fake provider (or, in cloud
// mode, the real platform), the server under test, and the sessions the
// spec opened. Specs never clean up by listing: the sessions they open are
// closed when the spec ends, and the fake is replaced for the next spec; in
// cloud mode every sandbox the spec's calls created is tracked and
// destroyed by ID when the spec ends, if the server has not done so.
type TestContext struct {
	// Config is the run's configuration.
	Config *Config
	// Fake is this spec's fake provider: journal, faults, canaries, seeding.
	// It is nil in cloud mode (specs that use it are NeedsFake).
	Fake *fakeprovider.Provider
	// Clock is the fake provider's clock; nil in cloud mode.
	Clock *fakeprovider.FakeClock
	// Platform is the kit's own SDK on the real platform in cloud mode, for
	// cross-checking the server; nil against the fake.
	Platform *sandbox.Platform

	run    *runState
	specID string
	// era is the era of the spec's run.
	era Era
	// latestMovedEnd is the latest end the spec gave a sandbox at the
	// fake itself (see movedEnd), under mu.
	latestMovedEnd time.Time

	// target is the server the spec reaches: the run's, or for a Process
	// spec of an in-process run, the reference server's command.
	target target

	mu         sync.Mutex
	sessions   []*Session
	transcript []Exchange
	nsessions  int
	// clientViolations are the TOOLS-5 failures of the spec's results.
	clientViolations []string
	created          []createdSandbox
	// findings are the run findings this spec has met ("RULE tool"), not
	// yet in its report.
	findings map[string]bool
	// fakeCreated names, by sandbox ID, the tool call during which each
	// sandbox appeared at the fake (fake mode), for the leak check.
	fakeCreated map[string]string
	// survivors are the sandboxes the spec means to outlive its sessions,
	// with the reason (see Survives).
	survivors map[string]string
	// endings counts how the server processes of the spec's sessions
	// ended, by [processEnding] (stdio targets).
	endings map[string]int
	// failedCalls counts the spec's calls that failed as unreachable
	// provider calls do (for diagnose).
	failedCalls int
	// notJudged is why the spec cannot be judged ("kind: reason"), or "";
	// defects are what it saw that holds anyway (outcome.go).
	notJudged string
	defects   []string
	// callGen counts the spec's calls begun, inflight those not ended;
	// wrongSandbox are the calls that acted on another sandbox than they
	// named (wrongsandbox.go).
	callGen      uint64
	inflight     int
	wrongSandbox []string
	// load is the no-op latency measured for the spec's bounds (allow).
	load     latencyGauge
	loadOnce sync.Once
}

// createdSandbox is a sandbox the spec's calls (or the kit, for the spec)
// created in cloud mode.
type createdSandbox struct {
	id, source string
}

// Exchange is one call of the spec's transcript.
type Exchange struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Result    string          `json:"result"`
	// Session numbers the spec's sessions from 1.
	Session int `json:"session"`
	// Probe marks a call the kit made on its own in cloud mode (get_sandbox
	// without arguments) to learn the ID of a sandbox a tool created
	// implicitly; it is not one of the spec's calls.
	Probe bool `json:"probe,omitempty"`
}

// Session is one MCP session the spec opened.
type Session struct {
	tc     *TestContext
	conn   *clientConn
	once   sync.Once
	closed error
	n      int

	// defaultID is the session's default sandbox as far as the kit knows
	// (cloud mode only), under mu.
	mu        sync.Mutex
	defaultID string
	// kitDefault is, for a server of profile explicit-ids, the sandbox
	// the session last created: the kit names it in calls without
	// sandbox_id. Under mu.
	kitDefault string
	// kitProbed counts the sandboxes the kit's explicit-ids probe created.
	kitProbed int
	calls     int
}

// Kind tells how the server is reached.
func (tc *TestContext) Kind() TargetKind { return tc.Config.Kind() }

// Logs returns what the server under test has logged so far (its stderr).
func (tc *TestContext) Logs() string { return tc.target.logs() }

// OpenConnections returns the loopback connections open to the fake now;
// it is 0 for the in-process target, which uses no sockets.
func (tc *TestContext) OpenConnections() int {
	if tc.run.hub == nil {
		return 0
	}
	return tc.run.hub.openConnections()
}

// Cloud reports whether the run is in cloud mode.
func (tc *TestContext) Cloud() bool { return tc.run.cloud != nil }

// SpecID returns the ID of the running spec.
func (tc *TestContext) SpecID() string { return tc.specID }

// Advertised returns the server's tool by contract name, or nil.
func (tc *TestContext) Advertised(contractName string) *mcp.Tool {
	return tc.run.tools[contractName]
}

// Era returns the era of the spec's run.
func (tc *TestContext) Era() Era { return tc.era }

// Leased reports whether the run is judged by leases (section 13): a
// modern run, or a legacy run of a sessionless profile.
func (tc *TestContext) Leased() bool { return tc.Config.leased(tc.era) }

// namesSandboxes reports whether the kit names the sandbox of every call
// that takes one: in a modern run (there is no default, MODERN-1) and for
// a server of profile explicit-ids.
func (tc *TestContext) namesSandboxes() bool {
	return tc.era == EraModern || tc.Config.Profile == ProfileExplicitIDs
}

// Connect opens a new session (a modern connection in the modern era)
// offering the era's protocol version; it fails the spec when the server
// cannot be reached.
func (tc *TestContext) Connect(ctx context.Context) *Session {
	ginkgo.GinkgoHelper()
	s, err := tc.ConnectVersion(ctx, tc.era.version())
	if err != nil && ctx.Err() == nil {
		// A run error, not the spec's rules: the server did not start
		// (or answer initialize within --call-timeout) for this session.
		tc.inconclusive(inconclusiveNotStarted, fmt.Sprintf("a session could not be opened (bounded by --call-timeout %v): %v", tc.Config.CallTimeout, err))
	}
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "connect to the server under test")
	return s
}

// ConnectVersion opens a session offering the given protocol version.
func (tc *TestContext) ConnectVersion(ctx context.Context, version string) (*Session, error) {
	cctx, cancel := context.WithTimeout(ctx, tc.Config.CallTimeout)
	defer cancel()
	conn, err := tc.target.connect(cctx, version)
	if err != nil {
		return nil, err
	}
	s := &Session{tc: tc, conn: conn}
	tc.track(s)
	return s, nil
}

// MCP returns the underlying client session.
func (s *Session) MCP() *mcp.ClientSession { return s.conn.cs }

// Call calls a contract tool with arguments marshalled to JSON.
func (s *Session) Call(ctx context.Context, tool string, args any) *Result {
	raw, err := json.Marshal(args)
	if err != nil {
		panic(fmt.Sprintf("conformance: marshal arguments: %v", err))
	}
	if args == nil {
		raw = json.RawMessage(`{}`)
	}
	return s.CallRaw(ctx, tool, raw)
}

// CallRaw calls a contract tool with exactly these argument bytes, as
// the tool map adapts them: renamed and scaled for the server on the way
// out, the result read where the map says on the way back (see
// [ToolAdapter]). For a server of profile explicit-ids a call without
// sandbox_id names the session's last created sandbox.
func (s *Session) CallRaw(ctx context.Context, tool string, args json.RawMessage) *Result {
	args = s.explicitID(ctx, tool, args)
	return s.call(ctx, tool, args, false)
}

// call makes one call through the session wrapper; probe marks a call the
// kit made on its own.
func (s *Session) call(ctx context.Context, tool string, args json.RawMessage, probe bool) *Result {
	cctx, cancel := elasticContext(ctx, s.tc.callLimit(ctx))
	defer cancel()
	adapter := s.tc.Config.adapter(tool)
	sent := adapter.adaptArgs(args)
	s.mu.Lock()
	s.calls++
	call := s.calls
	s.mu.Unlock()
	var live map[string]bool
	if s.tc.Fake != nil {
		live = s.tc.liveIDs()
	}
	watch := s.tc.beginCall(tool, args)
	res, err := s.conn.cs.CallTool(cctx, &mcp.CallToolParams{Name: s.tc.Config.toolName(tool), Arguments: sent})
	if s.tc.Fake != nil {
		s.tc.noteAppeared(live, tool, s.n, call)
	}
	r := newResult(tool, res, err)
	s.tc.endCall(watch, r)
	s.tc.noteCall(r)
	// TOOLS-5, on every result of every spec: would the official clients
	// hand this result to their caller, or throw? Checked on the result as
	// it arrived, before the adapter reads it.
	if t := s.tc.Advertised(tool); t != nil {
		r.ClientViolation = s.tc.run.clients.check(r, t.OutputSchema)
	}
	adapter.normalise(r)
	if tool == "create_sandbox" && s.tc.namesSandboxes() {
		if id := r.String("sandbox_id"); id != "" {
			s.setKitDefault(id)
		}
	}
	s.tc.mu.Lock()
	s.tc.transcript = append(s.tc.transcript, Exchange{Tool: tool, Arguments: sent, Result: r.JSON, Session: s.n, Probe: probe})
	if r.ClientViolation != "" {
		s.tc.clientViolations = append(s.tc.clientViolations, r.ClientViolation)
	}
	s.tc.mu.Unlock()
	if s.tc.run.cloud != nil {
		s.observe(ctx, tool, args, r)
	}
	return r
}

// Close ends the session and waits until the server is done with it where
// the transport lets the kit see that (in-process and stdio).
func (s *Session) Close(ctx context.Context) error {
	s.once.Do(func() {
		s.closed = s.conn.cs.Close()
		if s.conn.ending != nil {
			s.tc.noteEnding(s.conn.ending())
		}
		if s.conn.ended != nil {
			wctx, cancel := context.WithTimeout(ctx, s.tc.settleTime())
			defer cancel()
			if err := s.conn.ended(wctx); err != nil && s.closed == nil {
				s.closed = fmt.Errorf("server did not finish the session: %w", err)
			}
		}
	})
	return s.closed
}

// settle is how long the run waits for a closed session's sandboxes to go.
func (tc *TestContext) settleTime() time.Duration { return tc.run.settleTime }

// Transcript returns the spec's calls so far.
func (tc *TestContext) Transcript() []Exchange {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return append([]Exchange(nil), tc.transcript...)
}

// finish closes every session the spec opened and waits, within the
// settle timeout, for the server to destroy the sandboxes they created.
func (tc *TestContext) finish(ctx context.Context) {
	tc.reportFindings()
	defer tc.reportOutcome()
	if tc.run.cloud != nil {
		claimed := tc.finishCloud(ctx)
		tc.run.keep(tc)
		if len(claimed) > 0 {
			ginkgo.Fail(fmt.Sprintf("the server reported %s as created by its sessions, but the platform says it started before the run began: "+
				"the run did not create it, so the kit left it alone (it destroys only what the run created)", strings.Join(claimed, ", ")))
		}
		return
	}
	tc.closeSessions(ctx)
	if tc.Leased() {
		// Section 13: no session to close; the lease ends what the spec
		// created.
		tc.run.keep(tc)
		tc.reportEndings()
		tc.diagnose()
		tc.checkLeaseEnds()
		return
	}
	tc.WaitFor(ctx, tc.Config.SettleTimeout, func() bool { return len(tc.leftBehind()) == 0 })
	tc.run.keep(tc)
	tc.reportEndings()
	tc.diagnose()
	tc.checkLeaks(tc.Config.SettleTimeout)
}

// closeSessions closes every session the spec opened.
func (tc *TestContext) closeSessions(ctx context.Context) {
	tc.mu.Lock()
	sessions := tc.sessions
	tc.sessions = nil
	tc.mu.Unlock()
	for _, s := range sessions {
		_ = s.Close(ctx)
	}
}

// seeded counts the live sandboxes the spec planted itself (not created
// through the server).
func (tc *TestContext) seeded() int {
	n := 0
	for _, rec := range tc.Fake.LiveSandboxes() {
		if rec.Metadata[seedMarker] == "1" {
			n++
		}
	}
	return n
}

// seedMarker marks sandboxes a spec planted as external sandboxes.
const seedMarker = "sandboxkit-seeded"

// Seed plants a running sandbox the session does not own (an external
// sandbox) and returns its ID.
func (tc *TestContext) Seed(seed fakeprovider.SandboxSeed) string {
	if tc.Fake == nil {
		ginkgo.Fail("Seed needs the fake provider: mark the spec NeedsFake")
	}
	if seed.Metadata == nil {
		seed.Metadata = map[string]string{}
	}
	seed.Metadata[seedMarker] = "1"
	return tc.Fake.AddSandbox(seed)
}

// WaitFor polls cond every 10 ms until it holds or limit passes; it reports
// whether it held. It never fails the spec by itself. The limit is what an
// idle machine needs: WaitFor adds a slack measured on the target in this
// spec (8 times the slowest of a few ping calls), so that a loaded
// machine does not fail a spec the server passes. A condition that holds
// at once costs no measurement.
func (tc *TestContext) WaitFor(ctx context.Context, limit time.Duration, cond func() bool) bool {
	if cond() {
		return true
	}
	deadline := time.Now().Add(tc.allow(ctx, limit))
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// track registers a session opened outside Connect, so it is closed when
// the spec ends.
func (tc *TestContext) track(s *Session) {
	tc.mu.Lock()
	if s.n == 0 {
		tc.nsessions++
		s.n = tc.nsessions
	}
	tc.sessions = append(tc.sessions, s)
	tc.mu.Unlock()
}
