package conformance

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The slack is latencyScale times the slowest no-op round trip measured,
// and grows with it.
func TestLatencyGaugeSlack(t *testing.T) {
	g := &latencyGauge{}
	if g.slack() != 0 {
		t.Fatalf("slack before any sample = %v, want 0", g.slack())
	}
	g.add(3 * time.Millisecond)
	g.add(40 * time.Millisecond)
	g.add(time.Millisecond)
	if want := latencyScale * 40 * time.Millisecond; g.slack() != want || g.samples() != 3 {
		t.Errorf("slack = %v over %d samples, want %v over 3", g.slack(), g.samples(), want)
	}
	if g.median() != 3*time.Millisecond {
		t.Errorf("median = %v, want 3ms", g.median())
	}
}

// An elastic context ends once its limit has passed, and with its parent;
// a limit read again when reached can keep it going.
func TestElasticContext(t *testing.T) {
	ctx, cancel := elasticContext(context.Background(), func() time.Duration { return 0 })
	defer cancel()
	<-ctx.Done() // a limit already passed: the test's own timeout catches a context that never ends
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("err = %v, want canceled", ctx.Err())
	}

	parent, stop := context.WithCancel(context.Background())
	var reads atomic.Int32
	grown := make(chan struct{})
	var once sync.Once
	ctx, cancel = elasticContext(parent, func() time.Duration {
		if reads.Add(1) == 1 {
			return time.Millisecond // reached at once: read again
		}
		once.Do(func() { close(grown) })
		return time.Hour
	})
	defer cancel()
	<-grown
	time.Sleep(10 * time.Millisecond)
	if ctx.Err() != nil {
		t.Fatalf("ended under a limit that grew to an hour: %v", ctx.Err())
	}
	stop()
	<-ctx.Done()
}

// A no-op call still in flight counts as at least as slow as its age: a
// starved machine widens the slack before the call returns to say so.
func TestLatencyGaugePendingWidensSlack(t *testing.T) {
	g := &latencyGauge{}
	g.add(time.Millisecond)
	g.setPending(time.Now().Add(-time.Hour))
	if g.slack() < latencyScale*time.Hour {
		t.Errorf("slack with a no-op in flight for an hour = %v, want at least %v", g.slack(), latencyScale*time.Hour)
	}
	g.setPending(time.Time{})
	if want := latencyScale * time.Millisecond; g.slack() != want {
		t.Errorf("slack after the call returned = %v, want %v", g.slack(), want)
	}
}

// The derived deadline is derivedDeadlineScale no-op round trips, within
// [minDerivedDeadline, the run's deadline].
func TestDerivedDeadline(t *testing.T) {
	run := 2 * time.Second
	for _, c := range []struct {
		worst, want time.Duration
	}{
		{0, minDerivedDeadline},
		{time.Microsecond, minDerivedDeadline},
		{15 * time.Millisecond, derivedDeadlineScale * 15 * time.Millisecond},
		{time.Second, run},
	} {
		if got := derivedDeadline(run, c.worst); got != c.want {
			t.Errorf("derivedDeadline(%v, %v) = %v, want %v", run, c.worst, got, c.want)
		}
	}
}
