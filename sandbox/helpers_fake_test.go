package sandbox_test

import (
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

// withEnv returns opts reading value for key, and the rest of the
// environment as before.
func withEnv(opts *sandbox.Options, key, value string) *sandbox.Options {
	get := opts.Getenv
	opts.Getenv = func(k string) string {
		if k == key {
			return value
		}
		return get(k)
	}
	return opts
}

// hangGuard bounds the tests' waits. It only turns a hang into a failure:
// no test passes or fails on how long something took (CI may be busy).
const hangGuard = 2 * time.Minute

// guarded runs call and fails t if it has not returned within hangGuard:
// for calls that only a deadline, a cancel or a kill can end, so that a
// broken one fails instead of hanging the run.
func guarded[T any](t *testing.T, call func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- call() }()
	select {
	case v := <-done:
		return v
	case <-time.After(hangGuard):
		t.Fatalf("call still running after %v", hangGuard)
		var zero T
		return zero
	}
}

// waitUntil calls cond every tick until it holds or within has passed,
// and reports whether it held. cond runs on the caller's goroutine, so it
// may stop the test.
func waitUntil(within, tick time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(within); !cond(); time.Sleep(tick) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}
