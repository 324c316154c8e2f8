package conformance

import (
	"testing"

	"github.com/sandboxkit/sandboxkit/server"
)

// TestDeclaredPolicies: the in-process reference server declares its own
// policies, another server only what its user declares, and a negative cap
// is refused.
func TestDeclaredPolicies(t *testing.T) {
	inProcess := NewConfig()
	if p := inProcess.declared(); !p.StrictMessages || p.SandboxesPerSession != server.DefaultSandboxesPerSession {
		t.Errorf("in-process: %+v, want strict messages and the reference server's sandbox cap", p)
	}
	url := NewConfig()
	url.ServerURL = "http://127.0.0.1:1/mcp"
	if p := url.declared(); p != (Policies{}) {
		t.Errorf("server URL with nothing declared: %+v, want none", p)
	}
	url.Policies = Policies{StrictMessages: true, SandboxesPerSession: 3, MaxSessions: 5}
	if p := url.declared(); p != url.Policies {
		t.Errorf("server URL: %+v, want what its user declared %+v", p, url.Policies)
	}
	url.Policies.MaxSessions = -1
	if err := url.Validate(); err == nil {
		t.Error("a negative declared session cap was accepted")
	}
}
