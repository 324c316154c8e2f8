package sandbox_test

import (
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
