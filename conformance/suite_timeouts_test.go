package conformance

import (
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// A spec's bound follows --call-timeout: the floors by default, four call
// timeouts (two for the cleanup) when that is longer.
func TestSpecTimeoutsFollowCallTimeout(t *testing.T) {
	for _, c := range []struct {
		call          time.Duration
		cloud         bool
		spec, cleanup time.Duration
	}{
		{30 * time.Second, false, 2 * time.Minute, time.Minute},
		{5 * time.Second, false, 2 * time.Minute, time.Minute},
		{90 * time.Second, false, 6 * time.Minute, 3 * time.Minute},
		{30 * time.Second, true, 5 * time.Minute, 3 * time.Minute},
		{3 * time.Minute, true, 12 * time.Minute, 6 * time.Minute},
	} {
		cfg := NewConfig()
		cfg.CallTimeout, cfg.Cloud = c.call, c.cloud
		if spec, cleanup := specTimeouts(cfg); spec != c.spec || cleanup != c.cleanup {
			t.Errorf("--call-timeout %v (cloud %v): spec %v, cleanup %v; want %v, %v", c.call, c.cloud, spec, cleanup, c.spec, c.cleanup)
		}
	}
	// Real sandboxes (conform --exec namespace) get the cloud's floors.
	cfg := NewConfig()
	cfg.FakeDaemon = func(fakeprovider.DaemonConfig) fakeprovider.Daemon { return nil }
	if spec, cleanup := specTimeouts(cfg); spec != 5*time.Minute || cleanup != 3*time.Minute {
		t.Errorf("real sandboxes: spec %v, cleanup %v; want 5m0s, 3m0s", spec, cleanup)
	}
}
