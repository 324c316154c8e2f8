package conformance

import (
	"context"
	"fmt"
	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"io"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/onsi/ginkgo/v2"

	"github.com/sandboxkit/sandboxkit/conformance/cloudstate"
	"github.com/sandboxkit/sandboxkit/evidence"
)

// runState is what lives for one run of the kit: the fake hub (or, in
// cloud mode, the kit's view of the real platform), the target and what
// the server advertised, and what the run's evidence needs as it goes
// (record.go): each spec's transcript, the secrets the run saw, the
// sandboxes it could not destroy.
type runState struct {
	cfg   *Config
	seams testSeams
	// id names the run in its state file and evidence.
	id      string
	started time.Time
	// secrets redacts every secret the run has seen so far.
	secrets *evidence.Redactor

	hub    *fakeHub                // fake modes
	e2b1   *fakeprovider.E2B1Reach // Config.E2B1's path, nil without
	cloud  *cloudBackend           // cloud mode
	target target
	tools  map[string]*mcp.Tool // by contract name
	server *mcp.Implementation
	// clients checks every result as the official clients read it (TOOLS-5).
	clients clientCheck
	// advertised is every tool name the server listed, in its order.
	advertised []string
	// settleTime is how long the run waits for a closed session's
	// sandboxes to go (Config.SettleTimeout, with cloud mode's floor).
	settleTime time.Duration

	// servesModern is whether the server answers 2026-07-28 requests
	// (probed once; the modern era's runs are not applicable otherwise).
	servesModern bool
	// servesLegacy is whether the server answers 2025 sessions (a
	// modern-only server does not).
	servesLegacy bool

	// processCmd is the reference server's command (RunOptions), and
	// process, in an in-process run given it, the target of the Process
	// specs (target_process.go).
	processCmd []string
	process    target

	mu            sync.Mutex
	transcripts   map[string][]Exchange // by spec ID
	failedCleanup []string
}

// newRun is a run of cfg that has not started: it has its ID and start
// time. The rest of cfg is read when the run starts (an embedding suite may
// still edit it in its own BeforeEach).
func newRun(cfg *Config, seams testSeams) *runState {
	id := cfg.RunID
	if id == "" {
		id = cloudstate.NewRunID()
	}
	return &runState{cfg: cfg, seams: seams, id: id, started: time.Now().UTC(), secrets: evidence.NewRedactor(),
		transcripts: map[string][]Exchange{}}
}

// start brings up the fake (or the cloud backend) and the target, and
// reads what the server advertises.
func (r *runState) start(ctx context.Context) error {
	cfg := r.cfg
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("conformance: configuration: %w", err)
	}
	r.settleTime = r.seams.settle(cfg)
	// The secrets the configuration holds: header values and the server's
	// secret-named environment variables.
	for _, v := range cfg.Headers {
		r.secrets.Add(v, headerSecret(v))
	}
	for _, kv := range cfg.ServerEnv {
		if k, v, ok := strings.Cut(kv, "="); ok && secretName(k) {
			r.secrets.Add(v)
		}
	}
	var env []string
	if cfg.Cloud {
		c, err := newCloudBackend(cfg, r.id)
		if err != nil {
			return err
		}
		r.cloud = c
	} else {
		r.hub = newFakeHub(cfg.FakeAPIKey)
		r.hub.routes = r.seams.fakeRoutes
		r.hub.newDaemon = cfg.FakeDaemon
		r.hub.fresh()
		r.secrets.Add(r.hub.apiKey)
		// Every target reaches the fake over loopback, the in-process
		// reference server too: its connections to the provider are then
		// real ones the kit can count (GET-6, TIMEOUT-6).
		if err := r.hub.listen(cfg.FakeAddr); err != nil {
			return err
		}
		env = r.hub.env()
		extra, err := r.reachE2B1()
		if err != nil {
			r.stop()
			return err
		}
		env = append(env, extra...)
	}
	switch cfg.Kind() {
	case TargetInProcess:
		t := &inProcessTarget{hub: r.hub, cloud: r.cloud, breakage: r.seams.breakage}
		if !cfg.Cloud {
			t.deadline, _ = cfg.providerDeadline()
		}
		r.target = t
	case TargetStdio:
		r.target = &stdioTarget{cfg: cfg, env: env, settle: r.settleTime}
	case TargetHTTP:
		r.target = &httpTarget{cfg: cfg, env: env, settle: r.settleTime}
	}
	if err := r.target.start(ctx); err != nil {
		r.stop()
		return err
	}
	if err := r.startProcess(ctx, env); err != nil {
		r.stop()
		return err
	}
	if err := r.discover(ctx); err != nil {
		r.stop()
		return err
	}
	r.servesModern = !r.cfg.Cloud && r.probeModern(ctx)
	return nil
}

// discover reads the server's tools/list once for capability checks.
func (r *runState) discover(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	defer cancel()
	conn, err := r.target.connect(cctx, ProtocolVersion)
	r.servesLegacy = err == nil && conn.cs.InitializeResult() != nil && isSessionVersion(conn.cs.InitializeResult().ProtocolVersion)
	if err != nil && !r.cfg.Cloud {
		// A modern-only server refuses 2025 sessions (TOOLS-4 lets a
		// server serve 2026-07-28 alone): its tools are read in that era.
		if mconn, merr := r.target.connect(cctx, ModernProtocolVersion); merr == nil {
			conn, err = mconn, nil
		}
	}
	if err != nil {
		return err
	}
	defer func() {
		_ = conn.cs.Close()
		if conn.ended != nil {
			_ = conn.ended(cctx)
		}
	}()
	if ir := conn.cs.InitializeResult(); ir != nil {
		r.server = ir.ServerInfo
	}
	byName := map[string]*mcp.Tool{}
	for tool, err := range conn.cs.Tools(cctx, nil) {
		if err != nil {
			return fmt.Errorf("conformance: tools/list: %w", err)
		}
		byName[tool.Name] = tool
		r.advertised = append(r.advertised, tool.Name)
	}
	r.tools = map[string]*mcp.Tool{}
	for _, name := range ContractTools() {
		if t, ok := byName[r.cfg.toolName(name)]; ok {
			r.tools[name] = t
		}
	}
	return nil
}

// stop ends the target, then, in cloud mode, destroys every sandbox the
// run created that is not known to be gone (through the kit's SDK, never by
// listing) and closes the run's state file.
func (r *runState) stop() {
	if r.target != nil {
		r.target.stop()
	}
	if r.hub != nil {
		r.hub.close()
	}
	_ = r.e2b1.Close()
	if r.cloud != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		r.noteCleanupFailed(r.cloud.finishAll(ctx))
	}
}

// newTestContext gives a spec a fresh fake provider (or, in cloud mode,
// the kit's SDK on the real platform).
func (r *runState) newTestContext(spec Spec, era Era) *TestContext {
	tc := &TestContext{Config: r.cfg, run: r, target: r.targetOf(spec), specID: runID(spec.ID, era), era: era}
	if st, ok := tc.target.(*stdioTarget); ok {
		st.beginSpec()
	}
	if r.cloud != nil {
		tc.Platform = r.cloud.platform
		return tc
	}
	tc.Fake, tc.Clock = r.hub.fresh()
	return tc
}

// Describe registers every spec under one Ginkgo container, for embedding
// the kit in another Ginkgo suite: call it at the top level of a test file
// (var _ = conformance.Describe(cfg)). cfg is read when the specs run.
// Evidence bundles need [RunWith].
func Describe(cfg *Config) bool { return describe(newRun(cfg, testSeams{}), nil, nil) }

// describe registers the specs; claim, when not nil, decides as each spec's
// turn comes whether this process runs it (see RunOptions.Claim). The
// run's banner is recorded in the report of the spec that starts the run
// and, when banner is not nil, printed there as soon as the server's tools
// are known.
func describe(run *runState, claim func(string) bool, banner io.Writer) bool {
	cfg := run.cfg
	return ginkgo.Describe("sandboxkit conformance", ginkgo.Ordered, ginkgo.ContinueOnFailure, func() {
		ginkgo.BeforeAll(func(ctx ginkgo.SpecContext) {
			if err := run.start(ctx); err != nil {
				// A run error, not a rule's failure: the summary prints it
				// as such (writeFailures).
				ginkgo.Fail(fmt.Sprintf("%s: %v", runErrorPrefix, err))
			}
			ginkgo.DeferCleanup(run.stop)
			text := run.banner(run.advertised)
			ginkgo.AddReportEntry(bannerEntry, text, ginkgo.ReportEntryVisibilityNever)
			if banner != nil {
				fmt.Fprint(banner, text)
			}
		}, ginkgo.NodeTimeout(max(2*time.Minute, specCalls*cfg.CallTimeout)))

		// One container per family, or per stretch of one family's specs
		// where a parallel run takes its long specs first (schedule).
		order := schedule(claim != nil)
		for start := 0; start < len(order); {
			family := order[start].spec.Family
			end := start + 1
			for end < len(order) && order[end].spec.Family == family {
				end++
			}
			stretch := order[start:end]
			ginkgo.Describe(string(family), ginkgo.Label(string(family)), func() {
				for _, s := range stretch {
					registerSpec(s.spec, s.era, cfg, func() *runState { return run }, claim)
				}
			})
			start = end
		}
	})
}

// specTimeouts bound one spec and its cleanup. A spec opens sessions and
// makes calls one after another, each bounded by Config.CallTimeout
// (--call-timeout), so its bound is a multiple of that bound (a server
// that takes long to start, as an npx one does, needs the longer
// --call-timeout for every session, and the spec for all of them), never
// less than a floor: 2 minutes, and 1 for the cleanup; a cloud run's 5 and
// 3, a real provider being slower than the fake, and so a run whose fake
// makes real sandboxes (Config.FakeDaemon: the specs that seed a hundred
// sandboxes or hold every call for the 10 s deadline took 2 to 3 minutes
// at load 20 to 40).
func specTimeouts(cfg *Config) (spec, cleanup time.Duration) {
	spec, cleanup = 2*time.Minute, time.Minute
	if cfg.Cloud || cfg.realSandboxes() {
		spec, cleanup = 5*time.Minute, 3*time.Minute
	}
	return max(spec, specCalls*cfg.CallTimeout), max(cleanup, cleanupCalls*cfg.CallTimeout)
}

// How many call timeouts a spec and its cleanup may take in a row (the
// default --call-timeout of 30s gives the floors).
const (
	specCalls    = 4
	cleanupCalls = 2
)

// registerSpec wraps one spec in an It with its labels, bounded by
// specTimeouts.
func registerSpec(spec Spec, era Era, cfg *Config, run func() *runState, claim func(string) bool) {
	specTimeout, cleanupTimeout := specTimeouts(cfg)
	id := runID(spec.ID, era)
	labels := append([]string{id, "era-" + string(era)}, spec.Rules...)
	labels = append(labels, EveryResultRules()...)
	if spec.NeedsFake {
		labels = append(labels, LabelNeedsFake)
	}
	if spec.CloudOnly {
		labels = append(labels, LabelCloudOnly)
	}
	title := fmt.Sprintf("[%s] %s", id, spec.Title)
	ginkgo.It(title, ginkgo.Label(labels...), func(ctx ginkgo.SpecContext) {
		if claim != nil && !claim(id) {
			ginkgo.Skip(ClaimedElsewhere)
		}
		r := run()
		switch {
		case spec.NeedsFake && r.cfg.Cloud:
			ginkgo.Skip("needs the fake provider (fault injection, journal or seeding): not run in cloud mode")
		case spec.CloudOnly && !r.cfg.Cloud:
			ginkgo.Skip("cloud-only: cross-checks a real provider, runs only in cloud mode (--cloud)")
		}
		if why := r.cfg.notApplicable(spec); why != "" {
			ginkgo.Skip(why)
		}
		if why := r.cfg.eraNotApplicable(spec, era, r.servesLegacy, r.servesModern); why != "" && !eraNeutral(spec.Family) {
			ginkgo.Skip(why)
		}
		for _, tool := range spec.Tools {
			if r.tools[tool] == nil {
				msg := fmt.Sprintf("the server does not advertise %s", r.cfg.toolName(tool))
				if r.cfg.RequireAll {
					ginkgo.Fail(msg + " (required: every contract tool)")
				}
				ginkgo.Skip(msg)
			}
		}
		if eraNeutral(spec.Family) && !r.servesLegacy && r.servesModern {
			era = EraModern // a modern-only server is reached in its one era
		}
		tc := r.newTestContext(spec, era)
		// Registered first, so it runs after finish, as a node of its own.
		ginkgo.DeferCleanup(tc.checkWrongSandbox)
		// DeferCleanup runs after the spec's state is final, so a failure
		// is visible here (inside a plain defer it is not yet recorded).
		ginkgo.DeferCleanup(func(cctx context.Context) {
			if ginkgo.CurrentSpecReport().Failed() {
				attachDiagnostics(tc)
			}
			tc.finish(cctx)
		}, ginkgo.NodeTimeout(cleanupTimeout))
		// The spec's ID labels the CPU profile samples of its goroutines
		// and of those they start (conform --cpuprofile).
		pprof.Do(ctx, pprof.Labels("spec", id), func(ctx context.Context) { spec.Body(ctx, tc) })
		tc.expectClientsAccept()
	}, ginkgo.SpecTimeout(specTimeout))
}

// attachDiagnostics adds the spec's transcript and the server's recent log
// to the report of a failed spec.
func attachDiagnostics(tc *TestContext) {
	var b strings.Builder
	for _, ex := range tc.Transcript() {
		probe := ""
		if ex.Probe {
			probe = " (kit probe)"
		}
		fmt.Fprintf(&b, "-> %s%s %s\n<- %s\n", tc.Config.toolName(ex.Tool), probe, ex.Arguments, truncate(ex.Result, 2000))
	}
	logs := tc.Logs()
	if len(logs) > 4000 {
		logs = "..." + logs[len(logs)-4000:]
	}
	ginkgo.AddReportEntry("transcript", tc.forReport(b.String()), ginkgo.ReportEntryVisibilityFailureOrVerbose)
	ginkgo.AddReportEntry("server log", tc.forReport(logs), ginkgo.ReportEntryVisibilityFailureOrVerbose)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
