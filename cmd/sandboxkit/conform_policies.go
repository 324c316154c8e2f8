package main

import (
	"github.com/spf13/pflag"

	"github.com/sandboxkit/sandboxkit/conformance"
)

// addPolicyFlags adds the flags by which a user declares the policies of a
// server the kit runs against (conformance.Policies): the WIRE and QUOTA
// rules bind only what a server declares.
func addPolicyFlags(fl *pflag.FlagSet, p *conformance.Policies) {
	fl.BoolVar(&p.StrictMessages, "strict-messages", false, "the server declares a strict-message policy: hold it to the WIRE rules (malformed JSON-RPC refused with -32700/-32600, and it keeps serving); without it their failures read as not applicable, with what the kit saw (in-process the reference server always declares it)")
	fl.IntVar(&p.SandboxesPerSession, "sandboxes-per-session", 0, "the server's declared cap on the sandboxes one session owns at once (the reference server: serve --sandboxes-per-session); spec cleanup.session-sandbox-cap needs it for a server in another process (in-process the reference server's default is known)")
	fl.IntVar(&p.MaxSessions, "max-sessions", 0, "the declared cap on a server URL's live HTTP sessions (the reference server: serve --max-sessions); the eviction specs fill it with sessions of their own, so declare a small one on a server the run has to itself (in-process the kit serves its own server at small caps)")
	fl.StringVar(&p.ClientIPHeader, "client-ip-header", "", "the header a server URL takes a client's address from (the reference server: serve --client-ip-header); spec cleanup.eviction-from-largest-holder needs X-Forwarded-For with --max-sessions")
}
