package conformance

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A spec that holds a server to a wall-clock bound (its provider deadline)
// allows, past the bound, a slack measured in the same run rather than a
// fixed grace: how long a call that does no work (a ping) takes on the
// same target, before and while the spec's own calls run. On a loaded
// machine every answer is late by about the same scheduling delay, and the
// no-op shows it; a server that ignores its deadline is late by the whole
// hold, which no slack reaches (the broken variants of broken_deadline_test.go).

// latencyScale is how many no-op round trips of slack a call past its
// bound gets: the faulted call is an MCP round trip plus a provider request
// or two before the held one, and its cancellation, each at most about a
// no-op's cost on the same machine at the same time.
const latencyScale = 8

// latencySamples is how many no-op calls measure the target before a spec's
// calls start.
const latencySamples = 5

// latencyGauge keeps the no-op round trips seen on a target.
type latencyGauge struct {
	mu    sync.Mutex
	worst time.Duration
	all   []time.Duration
	// pending is when the watch's no-op call now in flight started (zero
	// when none is): a machine too busy to answer it has been slow at
	// least that long, before the call returns to say so.
	pending time.Time
}

// noopCall makes one call that does no work on s and returns how long it
// took: a ping, which every MCP server answers at once with an empty
// result, or, from a server that does not know ping, tools/list. Not
// tools/list first: its answer is every tool's schemas, which the server
// marshals anew each time, and the gauge calls it every latencyPoll while
// a spec runs (most of the kit's own CPU time in an in-process run went
// there).
func noopCall(ctx context.Context, s *Session) (time.Duration, error) {
	start := time.Now()
	err := s.MCP().Ping(ctx, nil)
	var werr *jsonrpc.Error
	if errors.As(err, &werr) && werr.Code == jsonrpc.CodeMethodNotFound {
		start = time.Now()
		_, err = s.MCP().ListTools(ctx, nil)
	}
	return time.Since(start), err
}

// add records one round trip.
func (g *latencyGauge) add(took time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.worst = max(g.worst, took)
	g.all = append(g.all, took)
}

// measure makes n no-op calls on s one after another, each bounded by
// limit, and records each. A call that fails (the session broke) records
// how long it took to fail and ends the measurement.
func (g *latencyGauge) measure(ctx context.Context, s *Session, n int, limit time.Duration) {
	for range n {
		cctx, cancel := context.WithTimeout(ctx, limit)
		took, err := noopCall(cctx, s)
		cancel()
		g.add(took)
		if err != nil {
			return
		}
	}
}

// latencyPoll is how often watch makes a no-op call.
const latencyPoll = 20 * time.Millisecond

// watch makes a no-op call on s every latencyPoll (or right after the
// last, when that took longer) until stop is called, each bounded by limit:
// the load of the machine while other calls run, without adding much.
func (g *latencyGauge) watch(ctx context.Context, s *Session, limit time.Duration) (stop func()) {
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(latencyPoll)
		defer tick.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-tick.C:
			}
			cctx, ccancel := context.WithTimeout(wctx, limit)
			g.setPending(time.Now())
			took, err := noopCall(cctx, s)
			g.setPending(time.Time{})
			ccancel()
			if wctx.Err() != nil {
				return // cut short by stop: not a measurement
			}
			g.add(took)
			if err != nil {
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}

// setPending records when the watch's no-op call in flight started (the
// zero time: none is).
func (g *latencyGauge) setPending(at time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pending = at
}

// slack returns the measured allowance: latencyScale times the slowest
// no-op round trip seen so far, or the age of the one in flight when that
// is longer (a starved machine answers no no-op call until it is
// scheduled, and a bound read meanwhile must not be the idle one).
func (g *latencyGauge) slack() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	worst := g.worst
	if !g.pending.IsZero() {
		worst = max(worst, time.Since(g.pending))
	}
	return latencyScale * worst
}

// samples returns how many round trips were measured.
func (g *latencyGauge) samples() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.all)
}

// median returns the median round trip measured (0 before any).
func (g *latencyGauge) median() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.all) == 0 {
		return 0
	}
	sorted := slices.Clone(g.all)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}

// deadlineGrace is how much later than its provider deadline d a server may
// answer (ERR-3): half of d, the contract's tolerance for a call that makes
// a request or two before the one held, plus the slack measured on the
// machine now.
func deadlineGrace(d, slack time.Duration) time.Duration {
	return d/2 + slack
}

// elasticContext returns a context that ends when ctx does, or once
// limit() has passed since it was made. limit is read again whenever the
// bound it gave is reached, so a bound that grows with the measured slack
// lets a call that the machine's load delays go on, where a fixed one would
// cut it off. No goroutine waits in between: a timer fires at each bound.
func elasticContext(ctx context.Context, limit func() time.Duration) (context.Context, context.CancelFunc) {
	start := time.Now()
	ectx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	var timer *time.Timer
	fire := func() {
		if ectx.Err() != nil {
			return
		}
		if left := limit() - time.Since(start); left > 0 {
			mu.Lock()
			timer.Reset(left)
			mu.Unlock()
			return
		}
		cancel()
	}
	mu.Lock()
	timer = time.AfterFunc(limit(), fire)
	mu.Unlock()
	return ectx, func() {
		cancel()
		mu.Lock()
		timer.Stop()
		mu.Unlock()
	}
}

// callLimit returns the elastic bound of one call of the spec: the
// configured CallTimeout, and once that has passed, CallTimeout plus the
// slack measured then (a measurement only a call that slow pays for).
func (tc *TestContext) callLimit(ctx context.Context) func() time.Duration {
	start := time.Now()
	return func() time.Duration {
		d := tc.Config.CallTimeout
		if time.Since(start) < d {
			return d
		}
		return tc.allow(ctx, d)
	}
}

// allow returns d, a bound that holds on an idle machine, plus the slack
// measured on the target now: latencyScale times the slowest of
// latencySamples no-op calls (ping) on a session of the spec's own,
// opened and closed at the spec's first allow. Specs bound their waits and their
// "promptly" checks with it, so that a loaded machine delays them no more
// than it delays the server.
func (tc *TestContext) allow(ctx context.Context, d time.Duration) time.Duration {
	tc.measureLoad(ctx)
	return d + tc.load.slack()
}

// allowQuiet returns d plus n typical (median) no-op round trips measured
// as allow measures them: for a quiet period after which a late call would
// have arrived, which every wait pays in full (allow's slack is paid only
// by a wait that fails, and is made of the slowest round trip).
func (tc *TestContext) allowQuiet(ctx context.Context, d time.Duration, n int) time.Duration {
	tc.measureLoad(ctx)
	return d + time.Duration(n)*tc.load.median()
}

// measureLoad measures the spec's no-op round trips once.
func (tc *TestContext) measureLoad(ctx context.Context) {
	tc.loadOnce.Do(func() {
		s, err := tc.ConnectVersion(ctx, ProtocolVersion)
		if err != nil {
			return // no slack: the spec's own calls will say why
		}
		tc.load.measure(ctx, s, latencySamples, tc.Config.CallTimeout)
		_ = s.Close(ctx) // allow may come after the spec's sessions closed
	})
}

// worstRoundTrip returns the slowest round trip measured (0 before any).
func (g *latencyGauge) worstRoundTrip() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.worst
}

// derivedDeadlineScale is how many of the slowest no-op round trips
// measured at a deadline spec's start make the provider deadline the kit
// gives a reference server of its own in an in-process run: a healthy
// provider request to the in-process fake on loopback costs a few no-op
// round trips on the same machine at the same time, so the deadline stays
// far above any healthy call while the specs hold each faulted call for it.
const derivedDeadlineScale = 100

// minDerivedDeadline is the least derived provider deadline: on an idle
// machine a no-op takes microseconds, and a deadline of a few milliseconds
// would time out healthy calls on the first scheduling hiccup. Half a
// second did, once, at load 27 on 2 cores: a run_command after the fault
// was cleared, which must succeed, timed out.
const minDerivedDeadline = time.Second

// derivedDeadline is the provider deadline derived from the slowest no-op
// round trip measured now: derivedDeadlineScale of them, at least
// minDerivedDeadline and at most d, the deadline the run would otherwise
// use.
func derivedDeadline(d, worst time.Duration) time.Duration {
	return min(d, max(minDerivedDeadline, derivedDeadlineScale*worst))
}
