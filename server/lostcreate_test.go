package server

import (
	"strings"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// createChecks returns the create-check listings in the journal: lists
// filtered by a create nonce.
func createChecks(fp *fakeprovider.Provider) []fakeprovider.Entry {
	var out []fakeprovider.Entry
	for _, e := range fp.Journal().Calls(sandbox.OpListSandboxes) {
		if strings.Contains(e.Query.Get("metadata"), CreateTagKey+"=") {
			out = append(out, e)
		}
	}
	return out
}

// TestLostCreateMadeLater is the repro of a lost create: the provider
// freezes during create_sandbox {timeout: 86400}, the server gives up on
// it, and only then does the platform make the sandbox. The server's first
// check finds nothing; it keeps looking by the create's nonce, finds the
// sandbox once it exists, and destroys it. The log never claims that no
// sandbox was left.
func TestLostCreateMadeLater(t *testing.T) {
	h := newHarness(t, &harnessOptions{requestTimeout: 500 * time.Millisecond})
	c := h.connect()
	frozen := h.fp.InjectFault(fakeprovider.Fault{Op: sandbox.OpCreateSandbox, Hang: true, Orphan: true, Times: 1})
	e := c.fail("create_sandbox", map[string]any{"timeout": 86400})
	if e.Category != sandbox.Timeout && e.Category != sandbox.Unavailable {
		t.Errorf("create: %+v, want timeout or unavailable", e)
	}
	waitFor(t, "the first create check", func() bool { return len(createChecks(h.fp)) >= 1 })
	if n := h.fp.LiveCount(); n != 0 {
		t.Fatalf("%d sandboxes before the platform acted", n)
	}
	frozen.Release() // the platform makes the sandbox after the server gave up
	waitFor(t, "the late sandbox made", func() bool { return len(h.fp.Journal().Calls(sandbox.OpCreateSandbox)) == 1 })
	waitFor(t, "the late sandbox found and destroyed", func() bool {
		return strings.Contains(h.logs.String(), "owned sandbox destroyed") && h.fp.LiveCount() == 0
	})
	checks := createChecks(h.fp)
	if len(checks) < 2 {
		t.Errorf("%d create checks, want the empty one and the one that found it", len(checks))
	}
	create := h.fp.Journal().Calls(sandbox.OpCreateSandbox)[0]
	tag := strings.TrimPrefix(checks[0].Query.Get("metadata"), CreateTagKey+"=")
	if tag == "" || !strings.Contains(string(create.Body), tag) {
		t.Errorf("the check's nonce %q is not the create's metadata: %s", tag, create.Body)
	}
	logs := h.logs.String()
	if !strings.Contains(logs, "lost create left a sandbox; destroying it") {
		t.Errorf("not logged:\n%s", logs)
	}
	if strings.Contains(logs, "no sandbox appeared") || strings.Contains(logs, "left no sandbox") {
		t.Errorf("the log says no sandbox was left:\n%s", logs)
	}
	if e := c.fail("get_sandbox", nil); e.Code != codeNoDefault {
		t.Errorf("get_sandbox: %+v", e)
	}
}

// TestLostCreateWindowEnds: when nothing appears within the check window,
// the log says how long it looked and how long a sandbox made later can
// live; it never says none was left.
func TestLostCreateWindowEnds(t *testing.T) {
	h := newHarness(t, &harnessOptions{requestTimeout: 500 * time.Millisecond, limits: Limits{CreateCheckFor: time.Millisecond}})
	c := h.connect()
	frozen := h.fp.InjectFault(fakeprovider.Fault{Op: sandbox.OpCreateSandbox, Hang: true, Orphan: true, Times: 1})
	c.fail("create_sandbox", map[string]any{"timeout": 600})
	waitFor(t, "the check window's end", func() bool { return strings.Contains(h.logs.String(), "no sandbox appeared within the check window") })
	if logs := h.logs.String(); !strings.Contains(logs, `"lifetime":"10m0s"`) || strings.Contains(logs, "left no sandbox") {
		t.Errorf("log:\n%s", logs)
	}
	frozen.Release()
	waitFor(t, "the late sandbox made", func() bool { return h.fp.LiveCount() == 1 })
}
