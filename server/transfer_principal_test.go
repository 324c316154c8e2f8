package server

import (
	"testing"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

// HANDLE-5: another principal's upload_file or download_file with transfer
// "url" on a sandbox it does not hold is not_found, exactly as an unknown
// sandbox is: no URL, and no call reaches the sandbox's daemon (no stat, no
// connect). The owner still gets its URL.
func TestTransferURLBoundToPrincipal(t *testing.T) {
	h := newHarness(t, nil)
	ts := serveTwoPrincipals(t, h)
	as := func(tok string) *client { return connectModernHTTP(t, h, ts.URL, bearer(t, tok)) }
	alice, bob := as("token-of-alice-123"), as("token-of-bob-4567")
	id := alice.ok("create_sandbox", nil)["sandbox_id"].(string)
	alice.ok("write_file", map[string]any{"path": "/tmp/secret.txt", "content": "alice's", "sandbox_id": id})
	unknown := bob.fail("download_file", map[string]any{"path": "/tmp/secret.txt", "transfer": "url", "sandbox_id": "nosuchsandbox000000000"})
	h.fp.Journal().Reset()
	for _, tool := range []string{"download_file", "upload_file"} {
		te := bob.fail(tool, map[string]any{"path": "/tmp/secret.txt", "transfer": "url", "sandbox_id": id})
		if te.Category != sandbox.NotFound || te.Recovery != unknown.Recovery || te.HTTPStatus != unknown.HTTPStatus {
			t.Errorf("bob's %s url on alice's sandbox: %+v, want what an unknown one gets (%+v)", tool, te, unknown)
		}
	}
	for _, op := range []string{sandbox.OpConnectSandbox, sandbox.OpFilesystemStat, sandbox.OpFilesDownload, sandbox.OpFilesUpload} {
		if n := h.fp.Journal().Count(op); n != 0 {
			t.Errorf("bob's transfer calls made %d %s calls: %v", n, op, h.fp.Journal().Ops())
		}
	}
	if out := alice.urlCall("download_file", map[string]any{"path": "/tmp/secret.txt", "sandbox_id": id}); out["url"] == "" {
		t.Error("alice's own download_file url form returned no url")
	}
}

// HANDLE-1: a sandbox a 2025 session owns carries its principal, and is
// not_found to another principal's session and to its modern requests, as
// an unknown one is; nothing reaches it. Another session of the same
// principal still reaches it by ID.
func TestSessionSandboxBoundToPrincipal(t *testing.T) {
	h := newHarness(t, nil)
	ts := serveTwoPrincipals(t, h)
	alice := connectHTTP(t, h, ts.URL, bearer(t, "token-of-alice-123"))
	id := alice.ok("create_sandbox", nil)["sandbox_id"].(string)
	if rec, _ := h.fp.Sandbox(id); rec.Metadata[SessionPrincipalTagKey] != "alice" || rec.Metadata[PrincipalTagKey] != "" {
		t.Errorf("session principal in metadata %q (lease principal %q), want alice (none)", rec.Metadata[SessionPrincipalTagKey], rec.Metadata[PrincipalTagKey])
	}
	bob, bobModern := connectHTTP(t, h, ts.URL, bearer(t, "token-of-bob-4567")), connectModernHTTP(t, h, ts.URL, bearer(t, "token-of-bob-4567"))
	unknown := bob.fail("get_sandbox", map[string]any{"sandbox_id": "nosuchsandbox000000000"})
	h.fp.Journal().Reset()
	for who, c := range map[string]*client{"bob's session": bob, "bob's modern request": bobModern} {
		for name, args := range map[string]map[string]any{
			"get_sandbox":         {"sandbox_id": id},
			"run_command":         {"command": "true", "sandbox_id": id},
			"download_file":       {"path": "/tmp/x", "transfer": "url", "sandbox_id": id},
			"set_sandbox_timeout": {"sandbox_id": id, "timeout": 10},
			"kill_sandbox":        {"sandbox_id": id},
		} {
			te := c.fail(name, args)
			if te.Category != sandbox.NotFound || te.Recovery != unknown.Recovery || te.HTTPStatus != unknown.HTTPStatus {
				t.Errorf("%s %s on alice's session's sandbox: %+v, want what an unknown one gets (%+v)", who, name, te, unknown)
			}
		}
	}
	for _, op := range []string{sandbox.OpConnectSandbox, sandbox.OpSetTimeout, sandbox.OpKillSandbox, sandbox.OpProcessStart} {
		if n := h.fp.Journal().Count(op); n != 0 {
			t.Errorf("bob's calls made %d %s calls: %v", n, op, h.fp.Journal().Ops())
		}
	}
	again := connectHTTP(t, h, ts.URL, bearer(t, "token-of-alice-123"))
	again.ok("run_command", map[string]any{"command": "true", "sandbox_id": id})
}
