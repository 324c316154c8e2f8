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
	fl.IntVar(&p.SandboxesPerPrincipal, "sandboxes-per-principal", 0, "the server's declared cap on one principal's live sandboxes, in both eras (the reference server: serve --sandboxes-per-principal, 20 by default with --tokens-file); spec cleanup.principal-sandbox-cap fills it as the first principal, so the principal must hold no other sandbox, and needs --second-token-file (in-process the kit serves its own server at a cap of 3)")
	fl.BoolVar(&p.OwnSandboxesOnly, "own-sandboxes-only", false, "the server confines each principal to the sandboxes created for it (the reference server: serve --own-sandboxes-only); spec handles.own-sandboxes-only needs it for a server in another process (in-process the kit serves its own server with the option); many other specs reach external sandboxes, which such a server refuses: run it with --focus own-sandboxes-only")
}
