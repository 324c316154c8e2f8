package conformance

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// The deadline specs of the errors family hold or stretch the provider's
// answers (a hang past the server's provider deadline, a body that drips a
// byte at a time, a body larger than any bound) on the platform call of
// every tool, each tool in a session and on a sandbox of its own, all at
// once. Every call must end in a categorized tool error (or, where the
// answer can arrive whole, a success) within the server's deadline plus a
// grace (half of it, and a slack measured in the same run: latency.go),
// leak nothing, and leave no request to the provider in flight: a
// server that stops waiting without cancelling its request keeps a
// connection and the goroutine serving it alive. Then the same call,
// without the fault, must succeed.

// deadlineOversize is the body size of the oversized fault for a server
// the kit does not configure (Config.oversizeBytes): more than any answer
// a server should read whole (the reference SDK stops at 32 MiB).
const deadlineOversize = 40 << 20

// deadlineDownloadBytes is the max_bytes of download_file under the
// oversized fault.
const deadlineDownloadBytes = 64 << 10

// deadlineFault is one way the provider stretches an answer.
type deadlineFault struct {
	name  string // the spec is errors.<name>
	title string // the spec's title
	// fault builds the fault for one case; d is the server's deadline.
	fault func(c *Config, d time.Duration) fakeprovider.Fault
	// want returns the categories a mode's call may end in, and whether
	// a success is fine too.
	want func(m errsMode) (categories []string, successOK bool)
	// args, when set, adjusts a case's arguments.
	args func(m errsMode, args map[string]any) map[string]any
	// parallel bounds how many calls run at once (0: all).
	parallel int
	// onePerTool keeps one mode per tool (on the owned sandbox where
	// there is one): for faults whose every call costs real work.
	onePerTool bool
	// waits is true for a fault whose calls wait out the deadline (they
	// cost time, not work): in-process, the spec derives a short deadline
	// from the measured latency (useDerivedDeadline). A fault whose calls
	// cost work (an oversized body to read) keeps the run's deadline: a
	// short one would hold the work to a bound that the machine's load,
	// not the server, decides.
	waits bool
}

func deadlineFaults() []deadlineFault {
	return []deadlineFault{
		{
			name:  "hang",
			title: "answers every tool whose platform call hangs past the server's provider deadline (lifecycle calls, create, connect, the daemon's files and RPCs) with a timeout tool error without http_status within the deadline plus grace, cancels the abandoned request, leaks nothing, and the session stays usable",
			fault: func(*Config, time.Duration) fakeprovider.Fault { return fakeprovider.Fault{Hang: true} },
			want:  func(errsMode) ([]string, bool) { return []string{"timeout"}, false },
			waits: true,
		},
		{
			// A byte every quarter deadline: a body of more than three
			// bytes cannot arrive in time; a bodiless answer, or a short
			// one, arrives whole and the call may succeed.
			name:  "drip",
			title: "answers every tool whose platform answer drips a byte at a time with a timeout tool error (or a success when the answer is short enough to arrive) within the server's provider deadline plus grace, abandons the answer, leaks nothing, and the session stays usable",
			fault: func(_ *Config, d time.Duration) fakeprovider.Fault {
				return fakeprovider.Fault{Drip: d / 4}
			},
			want:  func(errsMode) ([]string, bool) { return []string{"timeout"}, true },
			waits: true,
		},
		{
			// The route's success status with a body past every bound:
			// reading it whole would take the server's memory. Its size:
			// Config.oversizeBytes.
			name:  "oversized",
			title: "answers every tool whose platform answer is a body past the server's bound (40 MiB, or a quarter more than the bound the kit gives the in-process server) with a provider_error or timeout tool error (the file tools: a categorized error or a bounded result) within the deadline plus grace, ends the request, leaks nothing, and the session stays usable",
			fault: func(c *Config, _ time.Duration) fakeprovider.Fault {
				return fakeprovider.Fault{Oversize: c.oversizeBytes()}
			},
			// A download asks for little, and must get no more.
			args: func(m errsMode, args map[string]any) map[string]any {
				if m.tool == "download_file" {
					return withArgs(args, "max_bytes", deadlineDownloadBytes)
				}
				return args
			},
			want: func(m errsMode) ([]string, bool) {
				switch {
				case m.content:
					// A file's content: too large for the tool, which reports
					// that in its own category, or cut at the tool's bound.
					return nil, true
				case m.bodiless:
					// The success needs no body: one may be ignored.
					return []string{"provider_error", "timeout"}, true
				}
				return []string{"provider_error", "timeout"}, false
			},
			parallel:   2,
			onePerTool: true,
		},
	}
}

// deadlineCase is one mode of one deadline spec: its own session, the
// sandbox its fault is keyed to, and the call's arguments.
type deadlineCase struct {
	mode    errsMode
	env     *errsEnv
	args    map[string]any
	sandbox string // the fault's sandbox ("" for calls that name none)
	fault   *fakeprovider.FaultHandle
	// shared is true for a fault that meets every request of its route
	// until cleared (a list names no sandbox), the server's own too.
	shared bool
	result *Result
	took   time.Duration
}

// label names the case in problem reports.
func (c *deadlineCase) label(f deadlineFault) string { return c.mode.name + " " + f.name }

// deadlineModes are every mode of the errors family: lifecycle tools,
// data-plane tools through connect, and the daemon's file routes and RPCs.
func deadlineModes() []errsMode {
	modes := errsControlModes()
	modes = append(modes, errsEnvdFileModes()...)
	return append(modes, errsEnvdRPCModes()...)
}

// onePerTool keeps the first owned mode of each tool, or its first mode
// when it has no owned one, in the order of modes.
func onePerTool(modes []errsMode) []errsMode {
	pick := map[string]int{}
	for i, m := range modes {
		j, seen := pick[m.tool]
		if !seen || (m.owned && !modes[j].owned) {
			pick[m.tool] = i
		}
	}
	var out []errsMode
	for i, m := range modes {
		if pick[m.tool] == i {
			out = append(out, m)
		}
	}
	return out
}

// deadlineSetup builds one case per usable mode, each in a new session with
// an owned sandbox (when create_sandbox is advertised) and an external one.
func deadlineSetup(ctx context.Context, tc *TestContext, f deadlineFault) []*deadlineCase {
	ginkgo.GinkgoHelper()
	var cases []*deadlineCase
	modes := deadlineModes()
	if f.onePerTool {
		modes = onePerTool(modes)
	}
	for _, m := range modes {
		env := tc.newErrsEnv(ctx)
		if !env.usable(m) {
			continue
		}
		c := &deadlineCase{mode: m, env: env, args: m.args(env)}
		if f.args != nil {
			c.args = f.args(m, c.args)
		}
		switch id, _ := c.args["sandbox_id"].(string); {
		case id != "":
			c.sandbox = id
		case m.owned:
			c.sandbox = env.owned
		}
		if i := strings.LastIndexByte(c.sandbox, ':'); i >= 0 {
			c.sandbox = c.sandbox[i+1:] // the platform sees the bare ID
		}
		cases = append(cases, c)
	}
	return cases
}

// deadlineCall makes every case's call under its fault, parallel at a time
// (0: all at once), each within limit() (read as the call goes on), and
// records each result and how long it took. A create runs after the others
// when a list is among them: a server may look for the sandbox a failed
// create left with a list of its own, which must not take the list case's
// fault.
func deadlineCall(ctx context.Context, cases []*deadlineCase, limit func() time.Duration, parallel int) {
	isCreate := func(c *deadlineCase) bool { return c.mode.op == sandbox.OpCreateSandbox }
	hasList := slices.ContainsFunc(cases, func(c *deadlineCase) bool { return c.mode.op == sandbox.OpListSandboxes })
	if hasList && slices.ContainsFunc(cases, isCreate) {
		first := slices.DeleteFunc(slices.Clone(cases), isCreate)
		deadlineCallAll(ctx, first, limit, parallel)
		deadlineCallAll(ctx, slices.DeleteFunc(slices.Clone(cases), func(c *deadlineCase) bool { return !isCreate(c) }), limit, parallel)
		return
	}
	deadlineCallAll(ctx, cases, limit, parallel)
}

// deadlineCallAll makes the cases' calls at once, parallel at a time.
func deadlineCallAll(ctx context.Context, cases []*deadlineCase, limit func() time.Duration, parallel int) {
	if parallel <= 0 {
		parallel = len(cases)
	}
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for _, c := range cases {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			cctx, cancel := elasticContext(ctx, limit)
			defer cancel()
			start := time.Now()
			c.result = c.env.s.Call(cctx, c.mode.tool, c.args)
			c.took = time.Since(start)
		})
	}
	wg.Wait()
}

// deadlineBody is the body of the spec of one deadline fault. The grace
// past the deadline is measured: no-op calls on a session of its own before
// and while the faulted calls run (latency.go).
func deadlineBody(f deadlineFault) func(ctx context.Context, tc *TestContext) {
	return func(ctx context.Context, tc *TestContext) {
		d, known := tc.Config.providerDeadline()
		if !known {
			skipOrFail(tc, "the server's provider deadline is unknown: give it with --provider-deadline (Config.ProviderDeadline), as the server was started with")
		}
		if f.waits {
			d = tc.useDerivedDeadline(ctx, d)
		}
		cases := deadlineSetup(ctx, tc, f)
		if len(cases) == 0 {
			ginkgo.Skip("the server advertises none of the tools this spec needs")
		}
		gauge := &latencyGauge{}
		probe := tc.Connect(ctx)
		gauge.measure(ctx, probe, latencySamples, tc.Config.CallTimeout)
		grace := func() time.Duration { return deadlineGrace(d, gauge.slack()) }
		for _, c := range cases {
			// Only the call's own request: a server may go on with work
			// of its own later (looking for a sandbox a failed create
			// left, say), which must not meet the fault.
			fault := f.fault(tc.Config, d)
			fault.Op, fault.SandboxID, fault.Times = c.mode.op, c.sandbox, 1
			// A request that names no sandbox (a list) cannot be told from
			// the server's own lists of the same moment (looking for what a
			// failed create of this spec left, say), which would take a
			// one-time fault before the call's request: every such request
			// meets it until the spec clears it.
			c.shared = c.sandbox == "" && !f.waits
			if c.shared {
				fault.Times = 0
			}
			c.fault = tc.Fake.InjectFault(fault)
		}
		check := newErrsChecker(tc)
		stop := gauge.watch(ctx, probe, tc.Config.CallTimeout)
		// The kit waits longer than the server may take, to tell a late
		// answer from none.
		deadlineCall(ctx, cases, func() time.Duration { return d + 2*grace() }, f.parallel)
		deadlineAwaitIdle(ctx, check, cases, f, d, grace)
		stop()
		for _, c := range cases {
			deadlineCheck(check, c, f, d, grace())
		}
		for _, c := range cases {
			c.fault.Clear()
			c.fault.Release()
		}
		ginkgo.AddReportEntry("deadline", deadlineReport(cases, d, grace(), gauge.samples()))
		deadlineFollowUp(ctx, check, cases, f, d+2*grace())
		check.done()
	}
}

// useDerivedDeadline returns the provider deadline of the spec's server. In
// an in-process run whose deadline is not configured (Config.ProviderDeadline),
// that is a reference server of the spec's own whose deadline is derived
// from the no-op round trips measured now (derivedDeadline): the spec holds
// every faulted call for the deadline, and a fixed one long enough for the
// most loaded machine makes every run pay for it. Otherwise (and when the
// fake's sandboxes are real, whose creation is work the no-op latency does
// not measure) it is d, the run's server's.
func (tc *TestContext) useDerivedDeadline(ctx context.Context, d time.Duration) time.Duration {
	ginkgo.GinkgoHelper()
	it, ok := tc.target.(*inProcessTarget)
	if !ok || tc.Config.ProviderDeadline > 0 || tc.Cloud() || tc.Config.realSandboxes() {
		return d
	}
	gauge := &latencyGauge{}
	probe := tc.Connect(ctx)
	gauge.measure(ctx, probe, latencySamples, tc.Config.CallTimeout)
	_ = probe.Close(ctx)
	derived := derivedDeadline(d, gauge.worstRoundTrip())
	dt, err := it.withDeadline(derived)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "a reference server with a provider deadline of %v", derived)
	tc.target = dt
	return derived
}

// deadlineAwaitIdle checks that every request the server gave up on ends:
// the fault holds a hung request until released, so only the server's
// cancelling it ends it now. One grace for all of them, from the end of the
// calls. A shared fault (a list's) also meets the server's own requests of
// its route, which a server may make at any time (looking for what a failed
// create left, retrying as the lists fail): it is cleared first, or new
// ones would keep it busy, and one that came just before may take the
// server's whole deadline d to be abandoned.
func deadlineAwaitIdle(ctx context.Context, check *errsChecker, cases []*deadlineCase, f deadlineFault, d time.Duration, grace func() time.Duration) {
	wctx, cancel := elasticContext(ctx, grace)
	defer cancel()
	sharedGrace := func() time.Duration { return d + grace() }
	sctx, cancelShared := elasticContext(ctx, sharedGrace)
	defer cancelShared()
	for _, c := range cases {
		waitCtx, bound := wctx, grace
		if c.shared {
			c.fault.Clear()
			waitCtx, bound = sctx, sharedGrace
		}
		if err := c.fault.WaitIdle(waitCtx); err != nil {
			check.addf("%s: %d request(s) to the provider still in flight %v after the answer: the server stopped waiting without cancelling them",
				c.label(f), c.fault.InFlight(), bound().Round(time.Millisecond))
		}
	}
}

// deadlineCheck checks one call's outcome: in time, categorized, no leak.
func deadlineCheck(check *errsChecker, c *deadlineCase, f deadlineFault, d, grace time.Duration) {
	label := c.label(f)
	r := c.result
	// A fault whose calls cost work (an oversized body to read up to the
	// server's cap) is slowed by the machine's load more than a no-op is:
	// it gets the grace twice, the bound the kit waits for it anyway. The
	// bound still catches a server that waits on past its deadline; what
	// such a fault checks is mostly the category (a body read whole is no
	// slower than the deadline on a fast machine).
	times := time.Duration(1)
	if !f.waits {
		times = 2
	}
	if c.took > d+times*grace {
		check.addf("%s: answered after %v, past the provider deadline %v plus %d × %v (half of it, and %d times the slowest no-op call of the run)",
			label, c.took.Round(time.Millisecond), d, times, grace.Round(time.Millisecond), latencyScale)
	}
	cats, successOK := f.want(c.mode)
	switch {
	case r.Err != nil:
		check.addf("%s: no tool result: %v", label, failureLine(r.Err.Error()))
		return
	case !r.IsError && successOK:
		if max, ok := c.args["max_bytes"].(int); ok {
			deadlineBounded(check, label, r, max)
		}
	case !r.IsError:
		check.addf("%s: succeeded, want a tool error of category %s", label, strings.Join(cats, " or "))
	default:
		if msgs := gomega.InterceptGomegaFailures(func() { check.tc.ExpectToolError(r, "") }); len(msgs) > 0 {
			check.addf("%s: %s", label, failureLine(msgs[0]))
		}
		cat := r.Category()
		if cat == "internal" || (len(cats) > 0 && !slices.Contains(cats, cat)) {
			check.addf("%s: category %q, want %s", label, cat, strings.Join(cats, " or "))
		}
		if max, ok := c.args["max_bytes"].(int); ok && f.name == "oversized" {
			// BIN-2: a server that reads at most max_bytes answers at
			// once, however large the file and however busy the machine;
			// one that reads on to its own cap may reach its deadline.
			check.addf("%s: a %s tool error for a download of at most %d bytes: reading no more than max_bytes cannot take the provider deadline", label, cat, max)
		}
		if _, has := r.ErrorObject()["http_status"]; has && f.name == "hang" {
			check.addf("%s: http_status %s although no response arrived", label, jsonText(r.ErrorObject()["http_status"]))
		}
		check.hint(label, r)
	}
	if !(f.name == "oversized" && c.mode.content) {
		check.noLeak(label, r.JSON)
	}
}

// deadlineBounded checks that a download_file result holds at most max
// bytes and says it was truncated (BIN-2).
func deadlineBounded(check *errsChecker, label string, r *Result, max int) {
	data, err := base64.StdEncoding.DecodeString(r.String("data_base64"))
	switch {
	case err != nil:
		check.addf("%s: data_base64 is not standard base64", label)
	case len(data) > max:
		check.addf("%s: %d bytes returned for max_bytes %d", label, len(data), max)
	case r.Structured["truncated"] != true:
		check.addf("%s: %d bytes of a larger file returned without truncated: true", label, len(data))
	}
}

// deadlineFollowUp makes each failed call again without the fault, all at
// once, each within limit: it must succeed (the session still works; a
// server still stuck on the faulted call fails here). A call that succeeded
// under the fault has shown that already, and may not be repeatable (a
// kill).
func deadlineFollowUp(ctx context.Context, check *errsChecker, cases []*deadlineCase, f deadlineFault, limit time.Duration) {
	var again []*deadlineCase
	for _, c := range cases {
		if c.result.Err != nil || c.result.IsError {
			again = append(again, c)
		}
	}
	results := make([]*Result, len(again))
	var wg sync.WaitGroup
	for i, c := range again {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, limit)
			defer cancel()
			results[i] = c.env.s.Call(cctx, c.mode.tool, c.args)
		})
	}
	wg.Wait()
	for i, c := range again {
		check.success(c.label(f)+", then the same call without the fault", results[i])
	}
}

// deadlineReport describes each call's outcome and how long it took.
func deadlineReport(cases []*deadlineCase, d, grace time.Duration, samples int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "provider deadline %v, grace %v (half the deadline and %d times the slowest of %d no-op calls), %d tools\n",
		d, grace.Round(time.Millisecond), latencyScale, samples, len(cases))
	for _, c := range cases {
		outcome := "success"
		switch {
		case c.result.Err != nil:
			outcome = "no result"
		case c.result.IsError:
			outcome = c.result.Category()
		}
		fmt.Fprintf(&b, "  %-34s %-16s %v\n", c.mode.name, outcome, c.took.Round(time.Millisecond))
	}
	return b.String()
}

// deadlineSpecs are the deadline specs.
func deadlineSpecs() []Spec {
	var specs []Spec
	for _, f := range deadlineFaults() {
		specs = append(specs, Spec{ID: "errors." + f.name, Rules: []string{"ERR-1", "ERR-2", "ERR-3"}, Body: deadlineBody(f),
			Title: f.title})
	}
	return specs
}
