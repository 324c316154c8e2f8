package conformance

import (
	"fmt"
	"time"

	"github.com/sandboxkit/sandboxkit/server"
)

// Policies are what a server declares about itself where the contract's
// rules bind only a server that declares them: a strict-message policy (the
// WIRE rules, contract section 14) and its limits (the QUOTA rules, section
// 16). A zero field declares nothing, and the specs of what it would
// declare are skipped as not applicable (failed with RequireAll). The kit
// knows the in-process reference server's own policies; for another
// server, [Config.Policies] is what its user declares (conform
// --strict-messages, --sandboxes-per-session, --max-sessions,
// --client-ip-header, --sandboxes-per-principal, --own-sandboxes-only).
type Policies struct {
	// StrictMessages: the server refuses a malformed JSON-RPC message
	// (-32700 or -32600) and keeps serving (WIRE rules). Without it a WIRE
	// spec reports what it saw go wrong as not applicable.
	StrictMessages bool
	// SandboxesPerSession is the most sandboxes one session may own at
	// once (QUOTA-1; the reference server: serve --sandboxes-per-session).
	SandboxesPerSession int
	// MaxSessions is the server's cap on its live Streamable HTTP sessions
	// in all, at which it makes room for a newcomer by closing a session,
	// or refuses it (QUOTA-2, QUOTA-3; the reference server: serve
	// --max-sessions). The eviction specs fill it with sessions of their
	// own, so declare a small cap, on a server whose sessions are the
	// kit's alone. Only a server URL's is read: in-process the kit serves
	// a reference server of its own at the caps each spec needs.
	MaxSessions int
	// ClientIPHeader names the request header the server takes a client's
	// address from (the reference server: serve --client-ip-header);
	// spec cleanup.eviction-from-largest-holder sends its three clients'
	// sessions through it to a server URL, with MaxSessions.
	ClientIPHeader string
	// SandboxesPerPrincipal is the most live sandboxes one principal may
	// hold at once, in both eras (QUOTA-4; the reference server: serve
	// --sandboxes-per-principal). Spec cleanup.principal-sandbox-cap fills
	// it as the kit's first principal, so declare it for a server whose
	// sandboxes of that principal are the run's alone; it needs the
	// second principal too ([Config.SecondToken]). In-process the kit
	// serves a reference server of its own at a cap of its choosing.
	SandboxesPerPrincipal int
	// OwnSandboxesOnly: the server confines each principal to the
	// sandboxes created for it (HANDLE-6; the reference server: serve
	// --own-sandboxes-only). In-process the kit serves a reference server
	// of its own with the option.
	OwnSandboxesOnly bool
}

// referencePolicies returns the in-process reference server's own
// policies.
func referencePolicies() Policies {
	return Policies{StrictMessages: true, SandboxesPerSession: server.DefaultSandboxesPerSession}
}

// declared returns the policies the server under test declares as the kit
// knows them: the user's, and for the in-process reference server its own
// where the user declared none.
func (c *Config) declared() Policies {
	p := c.Policies
	if c.Kind() != TargetInProcess {
		return p
	}
	ref := referencePolicies()
	p.StrictMessages = p.StrictMessages || ref.StrictMessages
	p.SandboxesPerSession, _ = declaredOr(c, p.SandboxesPerSession, ref.SandboxesPerSession)
	return p
}

// declaredOr returns what the server declares of a value, and whether the
// kit knows it: set, the user's, when not zero; else, for the in-process
// reference server on the fake (started with it), ref.
func declaredOr[T int | time.Duration](c *Config, set, ref T) (T, bool) {
	switch {
	case set > 0:
		return set, true
	case c.Kind() == TargetInProcess && !c.Cloud:
		return ref, true
	}
	return 0, false
}

// validate refuses a negative cap: zero is how a policy is left undeclared.
func (p Policies) validate() error {
	if p.SandboxesPerSession < 0 || p.MaxSessions < 0 {
		return fmt.Errorf("declared caps: sandboxes per session %d, sessions %d: want 0 (none declared) or more", p.SandboxesPerSession, p.MaxSessions)
	}
	return nil
}
