package conformance

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// runState is what lives for one run of the kit: the fake hub, the target
// and what the server advertised.
type runState struct {
	cfg    *Config
	hub    *fakeHub
	target target
	tools  map[string]*mcp.Tool // by contract name
	server *mcp.Implementation
}

func startRun(ctx context.Context, cfg *Config) (*runState, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("conformance: configuration: %w", err)
	}
	r := &runState{cfg: cfg, hub: newFakeHub(cfg.FakeAPIKey)}
	r.hub.fresh()
	switch cfg.Kind() {
	case TargetInProcess:
		r.target = &inProcessTarget{hub: r.hub, breakage: cfg.breakage}
	case TargetStdio:
		r.target = &stdioTarget{cfg: cfg, hub: r.hub}
	case TargetHTTP:
		r.target = &httpTarget{cfg: cfg, hub: r.hub}
	}
	if cfg.Kind() != TargetInProcess {
		if err := r.hub.listen(cfg.FakeAddr); err != nil {
			return nil, err
		}
	}
	if err := r.target.start(ctx); err != nil {
		r.stop()
		return nil, err
	}
	if err := r.discover(ctx); err != nil {
		r.stop()
		return nil, err
	}
	return r, nil
}

// discover reads the server's tools/list once for capability checks.
func (r *runState) discover(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	defer cancel()
	conn, err := r.target.connect(cctx, ProtocolVersion)
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
	}
	r.tools = map[string]*mcp.Tool{}
	for _, name := range ContractTools() {
		if t, ok := byName[r.cfg.toolName(name)]; ok {
			r.tools[name] = t
		}
	}
	return nil
}

func (r *runState) stop() {
	if r.target != nil {
		r.target.stop()
	}
	r.hub.close()
}

// newTestContext gives a spec a fresh fake provider.
func (r *runState) newTestContext() *TestContext {
	fake, clock := r.hub.fresh()
	return &TestContext{Config: r.cfg, Fake: fake, Clock: clock, run: r}
}

// Describe registers every spec under one Ginkgo container, for embedding
// the kit in another Ginkgo suite: call it at the top level of a test file
// (var _ = conformance.Describe(cfg)). cfg is read when the specs run.
func Describe(cfg *Config) bool {
	return ginkgo.Describe("sandboxkit conformance", ginkgo.Ordered, ginkgo.ContinueOnFailure, func() {
		var run *runState
		ginkgo.BeforeAll(func(ctx ginkgo.SpecContext) {
			var err error
			run, err = startRun(ctx, cfg)
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), "start the conformance run")
			ginkgo.DeferCleanup(run.stop)
		}, ginkgo.NodeTimeout(2*time.Minute))

		for _, family := range Families() {
			ginkgo.Describe(string(family), ginkgo.Label(string(family)), func() {
				for _, spec := range Specs() {
					if spec.Family != family {
						continue
					}
					registerSpec(spec, func() *runState { return run })
				}
			})
		}
	})
}

// registerSpec wraps one spec in an It with its labels.
func registerSpec(spec Spec, run func() *runState) {
	labels := append([]string{spec.ID}, spec.Rules...)
	if spec.NeedsFake {
		labels = append(labels, LabelNeedsFake)
	}
	title := fmt.Sprintf("[%s] %s", spec.ID, spec.Title)
	ginkgo.It(title, ginkgo.Label(labels...), func(ctx ginkgo.SpecContext) {
		r := run()
		for _, tool := range spec.Tools {
			if r.tools[tool] == nil {
				msg := fmt.Sprintf("the server does not advertise %s", r.cfg.toolName(tool))
				if r.cfg.RequireAll {
					ginkgo.Fail(msg + " (required: every contract tool)")
				}
				ginkgo.Skip(msg)
			}
		}
		tc := r.newTestContext()
		// DeferCleanup runs after the spec's state is final, so a failure
		// is visible here (inside a plain defer it is not yet recorded).
		ginkgo.DeferCleanup(func(cctx context.Context) {
			if ginkgo.CurrentSpecReport().Failed() {
				attachDiagnostics(tc)
			}
			tc.finish(cctx)
		}, ginkgo.NodeTimeout(time.Minute))
		spec.Body(ctx, tc)
	}, ginkgo.SpecTimeout(2*time.Minute))
}

// attachDiagnostics adds the spec's transcript and the server's recent log
// to the report of a failed spec.
func attachDiagnostics(tc *TestContext) {
	var b strings.Builder
	for _, ex := range tc.Transcript() {
		fmt.Fprintf(&b, "-> %s %s\n<- %s\n", tc.Config.toolName(ex.Tool), ex.Arguments, truncate(ex.Result, 2000))
	}
	ginkgo.AddReportEntry("transcript", b.String(), ginkgo.ReportEntryVisibilityFailureOrVerbose)
	logs := tc.Logs()
	if len(logs) > 4000 {
		logs = "..." + logs[len(logs)-4000:]
	}
	ginkgo.AddReportEntry("server log", logs, ginkgo.ReportEntryVisibilityFailureOrVerbose)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
