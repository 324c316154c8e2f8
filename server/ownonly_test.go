package server

import (
	"testing"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// HANDLE-6: a server confined to own sandboxes answers an external ID and
// another session's sandbox with not_found, as an unknown one, in both
// eras, and reaches none of them; each caller still reaches its own.
func TestOwnSandboxesOnly(t *testing.T) {
	h := newHarness(t, &harnessOptions{ownOnly: true})
	ts := serveTwoPrincipals(t, h)
	modern := connectModernHTTP(t, h, ts.URL, bearer(t, "token-of-alice-123"))
	legacy := connectHTTP(t, h, ts.URL, bearer(t, "token-of-alice-123"))
	other := connectHTTP(t, h, ts.URL, bearer(t, "token-of-bob-4567"))
	external := h.fp.AddSandbox(fakeprovider.SandboxSeed{})
	leased := modern.ok("create_sandbox", nil)["sandbox_id"].(string)
	owned := legacy.ok("create_sandbox", nil)["sandbox_id"].(string)
	unknown := modern.fail("get_sandbox", map[string]any{"sandbox_id": "nosuchsandbox000000000"})
	refuse := func(who string, c *client, id string) {
		t.Helper()
		for name, args := range map[string]map[string]any{
			"get_sandbox":         {"sandbox_id": id},
			"run_command":         {"command": "true", "sandbox_id": id},
			"set_sandbox_timeout": {"sandbox_id": id, "timeout": 10},
			"kill_sandbox":        {"sandbox_id": id},
		} {
			te := c.fail(name, args)
			if te.Category != sandbox.NotFound || te.Recovery != unknown.Recovery {
				t.Errorf("%s %s on %s: %+v, want what an unknown one gets (%+v)", who, name, id, te, unknown)
			}
		}
	}
	h.fp.Journal().Reset()
	refuse("modern", modern, external)
	refuse("legacy", legacy, external)
	refuse("another principal's session", other, owned)
	refuse("another principal's session", other, leased)
	for _, op := range []string{sandbox.OpConnectSandbox, sandbox.OpSetTimeout, sandbox.OpKillSandbox, sandbox.OpProcessStart} {
		if n := h.fp.Journal().Count(op); n != 0 {
			t.Errorf("confined calls made %d %s calls: %v", n, op, h.fp.Journal().Ops())
		}
	}
	// Each still reaches its own: the lease of its principal in either era,
	// and the session's own sandbox.
	legacy.ok("run_command", map[string]any{"command": "true", "sandbox_id": leased})
	legacy.ok("run_command", map[string]any{"command": "true", "sandbox_id": owned})
	modern.ok("run_command", map[string]any{"command": "true", "sandbox_id": leased})
	for who, c := range map[string]*client{"modern": modern, "legacy": legacy} {
		items := c.ok("list_sandboxes", nil)["sandboxes"].([]any)
		if len(items) != 1 || items[0].(map[string]any)["sandbox_id"] != leased {
			t.Errorf("%s list_sandboxes: %v, want only the principal's leased sandbox %s", who, items, leased)
		}
	}
}

// Without the option an external ID stays reachable (section 4, RENEW-2).
func TestExternalAllowedByDefault(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect()
	external := h.fp.AddSandbox(fakeprovider.SandboxSeed{})
	c.ok("get_sandbox", map[string]any{"sandbox_id": external})
	c.ok("run_command", map[string]any{"command": "true", "sandbox_id": external})
}
