package conformance

import (
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// The kit's own tests bend a run through these setters; the seams they
// set are no part of what a user configures (see testSeams).

// seamsFor returns c's test seams, creating them on first use.
func (c *Config) seamsFor() *testSeams {
	if c.seams == nil {
		c.seams = &testSeams{}
	}
	return c.seams
}

// setBreakage makes the in-process reference server the broken variant b.
func (c *Config) setBreakage(b *breakage) { c.seamsFor().breakage = b }

// setCloudSettle replaces cloud mode's settle time (its 30 s floor is for
// real providers; the tests' fake destroys at once).
func (c *Config) setCloudSettle(d time.Duration) { c.seamsFor().cloudSettle = d }

// setFakeRoutes makes the fake serve one create/connect route family.
func (c *Config) setFakeRoutes(r fakeprovider.RouteFamily) { c.seamsFor().fakeRoutes = r }
