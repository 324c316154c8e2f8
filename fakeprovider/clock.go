package fakeprovider

import (
	"sync"
	"time"
)

// A Clock tells the fake what time it is. Every timestamp the fake stores or
// reports (startedAt, endAt, journal times) and every expiry decision comes
// from it, so a test that injects a [FakeClock] controls sandbox lifetimes
// without sleeping.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
}

// realClock is the default Clock: the system time.
type realClock struct{}

// Now returns time.Now().
func (realClock) Now() time.Time { return time.Now() }

// A FakeClock is a Clock that moves only when told to. It is safe for
// concurrent use.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewFakeClock returns a FakeClock that reads t until it is advanced or set.
func NewFakeClock(t time.Time) *FakeClock {
	return &FakeClock{now: t}
}

// Now returns the clock's current time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d (backwards when d is negative).
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
