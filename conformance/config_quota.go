package conformance

import "github.com/sandboxkit/sandboxkit/server"

// sessionSandboxCap returns the per-session sandbox cap the server under
// test declares (QUOTA-1), and whether it declares one: the in-process
// reference server's is [server.DefaultSandboxesPerSession]; another
// server's is [Config.SessionSandboxCap], unknown when zero.
func (c *Config) sessionSandboxCap() (int, bool) {
	switch {
	case c.SessionSandboxCap > 0:
		return c.SessionSandboxCap, true
	case c.Kind() == TargetInProcess && !c.Cloud:
		return server.DefaultSandboxesPerSession, true
	}
	return 0, false
}
