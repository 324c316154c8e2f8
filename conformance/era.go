package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Era is the MCP era a spec's run speaks (contract section 13): legacy
// connections, whose initialize negotiates a 2025 version with sessions,
// or modern requests at 2026-07-28, which have none. The era is a
// dimension of the catalog: each spec of an era-dependent family is
// registered once per era, and its report names the era.
type Era string

// The eras.
const (
	// EraLegacy is a 2025 session: initialize at [ProtocolVersion].
	EraLegacy Era = "legacy"
	// EraModern is a 2026-07-28 request: no initialize, no session, no
	// default sandbox (MODERN-1).
	EraModern Era = "modern"
)

// ModernProtocolVersion is the sessionless MCP version the modern era
// speaks (TOOLS-4).
const ModernProtocolVersion = "2026-07-28"

// Eras lists the eras in report order.
func Eras() []Era { return []Era{EraLegacy, EraModern} }

// version is the protocol version a client of the era offers.
func (e Era) version() string {
	if e == EraModern {
		return ModernProtocolVersion
	}
	return ProtocolVersion
}

// eraNeutral reports whether a family's specs are registered once, not
// once per era: the protocol specs compare the eras themselves, and the
// cloud specs cross-check the platform through legacy sessions.
func eraNeutral(f Family) bool {
	return f == FamilyProtocol || f == FamilyCloud
}

// runID is the ID a spec's run reports: the spec's ID in the legacy era,
// and the ID followed by "@2026-07-28" in the modern one, so that one spec
// has two results, each naming its era.
func runID(id string, e Era) string {
	if e == EraModern {
		return id + "@" + ModernProtocolVersion
	}
	return id
}

// leaseFamilies hold the rules of section 13 that replace the session
// rules for modern requests: leases and handles.
func leaseFamily(f Family) bool { return f == FamilyLease || f == FamilyHandles }

// sessionRules are the rules that describe legacy connections (section
// 13): sessions, their default, session renewal (RENEW-1), the close of
// background commands with their session (BG-4), and a session's binding
// to its principal (HANDLE-4).
var sessionRules = []string{"SESSION-1", "SESSION-2", "SESSION-3", "SESSION-4", "RENEW-1", "BG-4",
	"CREATE-5", "GET-2", "TIMEOUT-2", "LIST-2", "HANDLE-4"}

// sessionOnly reports whether every rule the spec checks describes legacy
// sessions: such a spec of a lease or handle family runs in the legacy era
// (HANDLE-4: a session ID is a handle too), and nowhere else.
func sessionOnly(spec Spec) bool {
	return len(spec.Rules) > 0 && profileSubset(spec.Rules, sessionRules)
}

// leased reports whether the run is judged by leases instead of sessions:
// every modern run, and, in the legacy era, a server of profile
// explicit-ids, which hands out sandbox IDs and owns no session: the modern
// era's rules applied to an older server. A one-shot server hands out no
// handle, so nothing but the call can end its sandbox: its call is its
// session, and the session leak check judges it.
func (c *Config) leased(e Era) bool {
	return e == EraModern || c.Profile == ProfileExplicitIDs
}

// eraNotApplicable returns why a spec does not apply in era e for this
// run, or "" when it does: servesLegacy and servesModern say which eras
// the server serves.
func (c *Config) eraNotApplicable(spec Spec, e Era, servesLegacy, servesModern bool) string {
	switch {
	case e == EraModern && !servesModern:
		return fmt.Sprintf("%s in era %s: the server does not serve it (a client offering it gets a 2025 session)", NotApplicablePrefix, ModernProtocolVersion)
	case e == EraLegacy && !servesLegacy:
		return fmt.Sprintf("%s to 2025 sessions: the server serves only %s", NotApplicablePrefix, ModernProtocolVersion)
	case leaseFamily(spec.Family) && !c.leased(e) && !sessionOnly(spec):
		return fmt.Sprintf("%s to legacy sessions of profile %s: leases and handles are the rules of modern requests (section 13); the session leak check judges sessions", NotApplicablePrefix, c.profileName())
	case !c.leased(e):
		return ""
	case spec.Family == FamilyDefault || spec.Family == FamilyCleanup:
		return fmt.Sprintf("%s %s: it checks a session's default sandbox or its close, and %s", NotApplicablePrefix, c.eraWords(e), c.noSessionWhy(e))
	case spec.ID == "bounds.empty-id-with-default":
		return fmt.Sprintf("%s %s: it needs a session default sandbox, and %s", NotApplicablePrefix, c.eraWords(e), c.noSessionWhy(e))
	case sessionOnly(spec):
		return fmt.Sprintf("%s %s: its rules (%s) describe legacy sessions, and %s", NotApplicablePrefix, c.eraWords(e), strings.Join(spec.Rules, ", "), c.noSessionWhy(e))
	case slices.ContainsFunc(spec.Rules, func(r string) bool { return slices.Contains(sessionBoundRules, r) }):
		return fmt.Sprintf("%s %s: it checks what a session does with its sandboxes or commands (%s), and %s", NotApplicablePrefix, c.eraWords(e), strings.Join(spec.Rules, ", "), c.noSessionWhy(e))
	case spec.ID == "renewal.failed-update-keeps-policy":
		return fmt.Sprintf("%s %s: set_sandbox_timeout sets a leased sandbox's end, not its policy, which stays the create-time one (LEASE-2, LEASE-4)", NotApplicablePrefix, c.eraWords(e))
	case e == EraModern && modernNotApplicable[spec.ID] != "":
		return fmt.Sprintf("%s in era %s: %s", NotApplicablePrefix, ModernProtocolVersion, modernNotApplicable[spec.ID])
	}
	return ""
}

// sessionBoundRules are the rules a spec that names any of them checks a
// session through: a default sandbox created implicitly (SESSION-2), what
// a session's close destroys (SESSION-3), session-scoped commands (BG-4),
// session renewal (RENEW-1).
var sessionBoundRules = []string{"SESSION-2", "SESSION-3", "BG-4", "RENEW-1"}

// modernNotApplicable are the specs whose check a modern request answers
// differently by rule, with the rule that says so.
var modernNotApplicable = map[string]string{
	"delegation.set-timeout-external": "it counts the provider requests of a call on an external ID, and a modern server first reads the sandbox's metadata to tell another principal's sandbox from an external one (HANDLE-1)",
	"delegation.qualified-default-id": "it counts the provider requests of calls on an external ID, and a modern server first reads the sandbox's metadata (HANDLE-1)",
}

func (c *Config) profileName() Profile {
	if c.Profile == "" {
		return ProfileContract
	}
	return c.Profile
}

func (c *Config) eraWords(e Era) string {
	if e == EraModern {
		return "in era " + ModernProtocolVersion
	}
	return "under profile " + string(c.Profile)
}

func (c *Config) noSessionWhy(e Era) string {
	if e == EraModern {
		return "a modern request has no session (MODERN-1, LEASE-3)"
	}
	return "the server keeps no session state: the kit judges it by leases (section 13)"
}

// servesModern reports whether the server answers a client offering
// 2026-07-28 in that version (TOOLS-4: it may serve it beside 2025).
func (r *runState) probeModern(ctx context.Context) bool {
	cctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	defer cancel()
	conn, err := r.target.connect(cctx, ModernProtocolVersion)
	if err != nil {
		return false
	}
	defer func() {
		_ = conn.cs.Close()
		if conn.ended != nil {
			_ = conn.ended(cctx)
		}
	}()
	ir := conn.cs.InitializeResult()
	return ir != nil && ir.ProtocolVersion == ModernProtocolVersion
}

// isModernVersion reports whether v is a sessionless version.
func isModernVersion(v string) bool { return v >= ModernProtocolVersion }

// sessionVersions are the versions initialize may negotiate (TOOLS-4).
var sessionVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

func isSessionVersion(v string) bool { return slices.Contains(sessionVersions, v) }

// specEras lists the eras a spec is registered in: one for the
// era-neutral families, every era for the others.
func specEras(spec Spec) []Era { return spec.Eras() }

// Eras lists the eras the spec runs in: both, except for the era-neutral
// families (protocol and cloud), which run once, in the legacy era.
func (spec Spec) Eras() []Era {
	if eraNeutral(spec.Family) {
		return []Era{EraLegacy}
	}
	return Eras()
}
