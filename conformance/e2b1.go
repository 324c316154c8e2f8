package conformance

import (
	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// reachE2B1 sets up [Config.E2B1]'s path to the hub and returns the
// environment it adds for the server. Without a path it does nothing.
func (r *runState) reachE2B1() ([]string, error) {
	if r.cfg.E2B1 == fakeprovider.E2B1None {
		return nil, nil
	}
	addrs := r.cfg.E2B1DebugAddrs
	if addrs == (fakeprovider.DebugAddrs{}) {
		addrs = fakeprovider.DefaultDebugAddrs()
	}
	reach, err := fakeprovider.ReachE2B1(r.cfg.E2B1, r.hub, addrs, "")
	if err != nil {
		return nil, err
	}
	r.e2b1 = reach
	return reach.Env, nil
}

// e2b1Line is the banner's line naming the e2b 1.x path taken, or "".
func (r *runState) e2b1Line() string {
	if r.e2b1 == nil {
		return ""
	}
	return "  " + r.e2b1.Console + "\n"
}
