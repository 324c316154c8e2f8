package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// TestOwnershipMetadataAndLogs: every created sandbox carries the owner's
// instance, boot and session in its platform metadata, none of it reaches a
// tool result (META-4), and its ID is logged at create and at destroy.
func TestOwnershipMetadataAndLogs(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect()
	out := c.ok("create_sandbox", map[string]any{})
	id := out["sandbox_id"].(string)
	rec, ok := h.fp.Sandbox(id)
	if !ok {
		t.Fatalf("sandbox %s not at the fake", id)
	}
	inst := h.srv.Instance()
	if !strings.HasPrefix(inst, "anon-") {
		t.Errorf("default instance %q, want anon-<hex>", inst)
	}
	if rec.Metadata[InstanceTagKey] != inst || rec.Metadata[BootTagKey] == "" || rec.Metadata[SessionTagKey] != "1" || rec.Metadata[CreateTagKey] == "" {
		t.Errorf("metadata %v lacks the ownership tags", rec.Metadata)
	}
	res := resultJSON(t, c.call("get_sandbox", map[string]any{}))
	for _, v := range []string{InstanceTagKey, inst, rec.Metadata[BootTagKey], CreateTagKey} {
		if strings.Contains(res, v) {
			t.Errorf("get_sandbox result shows %q: %s", v, res)
		}
	}
	c.close()
	waitFor(t, "sandbox destroyed", func() bool { _, ok := h.fp.Sandbox(id); return !ok })
	waitFor(t, "destroy logged", func() bool {
		return strings.Contains(h.logs.String(), `"msg":"owned sandbox destroyed"`)
	})
	logs := h.logs.String()
	for _, msg := range []string{"owned sandbox created", "owned sandbox destroyed"} {
		found := false
		for _, line := range strings.Split(logs, "\n") {
			if strings.Contains(line, `"msg":"`+msg+`"`) && strings.Contains(line, `"sandbox_id":"`+id+`"`) {
				found = true
			}
		}
		if !found {
			t.Errorf("no %q line with sandbox_id %s:\n%s", msg, id, logs)
		}
	}
}

// TestSweepOrphans: a sweep for an instance destroys exactly the sandboxes
// tagged with it, a dry run destroys nothing, and sandboxes of another
// instance or without the tag are never touched.
func TestSweepOrphans(t *testing.T) {
	h := newHarness(t, nil)
	p := h.srv.deps.Platform
	var dead, other []string
	for range 3 {
		dead = append(dead, h.fp.AddSandbox(fakeprovider.SandboxSeed{Metadata: map[string]string{InstanceTagKey: "replica-0"}}))
	}
	other = append(other, h.fp.AddSandbox(fakeprovider.SandboxSeed{Metadata: map[string]string{InstanceTagKey: "replica-1"}}))
	other = append(other, h.fp.AddSandbox(fakeprovider.SandboxSeed{Metadata: map[string]string{"owner": "someone"}}))
	other = append(other, h.fp.AddSandbox(fakeprovider.SandboxSeed{Metadata: map[string]string{InstanceTagKey: "replica-00"}}))
	ctx := context.Background()

	rep, err := SweepOrphans(ctx, p, "replica-0", &SweepOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Found) != 3 || len(rep.Destroyed) != 0 || h.fp.LiveCount() != 6 {
		t.Fatalf("dry run: found %v destroyed %v, %d live; want 3 found, none destroyed, 6 live", rep.Found, rep.Destroyed, h.fp.LiveCount())
	}
	rep, err = SweepOrphans(ctx, p, "replica-0", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Destroyed) != 3 {
		t.Errorf("destroyed %v, want the 3 of replica-0", rep.Destroyed)
	}
	for _, id := range dead {
		if _, ok := h.fp.Sandbox(id); ok {
			t.Errorf("replica-0's sandbox %s survived", id)
		}
	}
	for _, id := range other {
		if _, ok := h.fp.Sandbox(id); !ok {
			t.Errorf("sandbox %s of another owner was destroyed", id)
		}
	}
	if _, err := SweepOrphans(ctx, p, "bad id!", nil); err == nil {
		t.Error("an invalid instance ID was accepted")
	}
}

// TestSweepPreviousKeepsOtherLives: a server built with an instance ID
// destroys what an earlier server of that ID created, and only that.
func TestSweepPreviousKeepsOtherLives(t *testing.T) {
	h := newHarness(t, nil)
	prev, err := New(&Deps{Platform: h.srv.deps.Platform, Instance: "web-0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := (&harness{t: t, fp: h.fp, srv: prev, logs: h.logs}).connect()
	owned := c.ok("create_sandbox", map[string]any{})["sandbox_id"].(string)
	foreign := h.connect().ok("create_sandbox", map[string]any{})["sandbox_id"].(string)
	// prev "dies": its session is never closed. A new life sweeps.
	next, err := New(&Deps{Platform: h.srv.deps.Platform, Instance: "web-0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := next.SweepPrevious(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Destroyed) != 1 || rep.Destroyed[0] != owned {
		t.Errorf("destroyed %v, want [%s]", rep.Destroyed, owned)
	}
	if _, ok := h.fp.Sandbox(foreign); !ok {
		t.Errorf("another instance's sandbox %s was destroyed", foreign)
	}
	c.drop()
}

// TestOwnerLease: under an owner lease the platform is never told a
// lifetime beyond the lease, the server renews it while it lives, tool
// results keep the session's own end, and a server that stops renewing
// (as a killed one does) leaves its sandbox to end within the lease.
//
// The fake platform runs on a fake clock: the test moves platform time by
// half a lease only after it has seen a renewal, so "the live server's
// sandbox survives two leases" and "the unrenewed one ends within the
// lease" are decided by what was sent, not by how fast this machine is.
func TestOwnerLease(t *testing.T) {
	clock := fakeprovider.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	h := newHarness(t, &harnessOptions{fake: &fakeprovider.Options{Clock: clock}})
	const lease = MinOwnerLease
	srv, err := New(&Deps{Platform: h.srv.deps.Platform, Instance: "leased-0", OwnerLease: lease}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := (&harness{t: t, fp: h.fp, srv: srv, logs: h.logs}).connect()
	t.Cleanup(c.drop)
	start := time.Now()
	out := c.ok("create_sandbox", map[string]any{"timeout": 600})
	created := time.Now()
	id := out["sandbox_id"].(string)
	rec, _ := h.fp.Sandbox(id)
	if left := rec.EndAt.Sub(clock.Now()); left > lease {
		t.Errorf("platform end %v ahead, want at most the lease %v", left, lease)
	}
	// The session's own end is 600 s after the server tracked the create,
	// which happened between start and created.
	end := out["end_at"].(string)
	if at, err := time.Parse(time.RFC3339Nano, end); err != nil || at.Before(start.Add(600*time.Second)) || at.After(created.Add(600*time.Second)) {
		t.Errorf("create_sandbox reports end_at %s (%v), want 600 s after the create (between %v and %v)", end, err, start, created)
	}
	// While the server lives it renews: after each renewal the platform's
	// clock moves half a lease, four times over (two leases), and the
	// sandbox is still there.
	before := h.fp.Journal().Count(sandbox.OpSetTimeout)
	idle := time.Now()
	for i := 1; i <= 4; i++ {
		waitFor(t, "a lease renewal", func() bool { return h.fp.Journal().Count(sandbox.OpSetTimeout) >= before+i })
		clock.Advance(lease / 2)
		if _, ok := h.fp.Sandbox(id); !ok {
			t.Fatalf("the sandbox ended %v of platform time after create with a live server: the lease was not renewed", time.Duration(i)*lease/2)
		}
	}
	// A storm check that a slow machine can only loosen: the renewal ticker
	// fires at most once per third of a lease of the time measured here.
	renewals, took := h.fp.Journal().Count(sandbox.OpSetTimeout)-before, time.Since(idle)
	if most := int(took/(lease/3)) + 2; renewals > most {
		t.Errorf("%d renewals in %v, want at most %d (one per third of the lease)", renewals, took, most)
	}
	t.Logf("lease renewals of an idle session: %d in %v at lease %v", renewals, took.Round(time.Millisecond), lease)
	if got := c.ok("get_sandbox", map[string]any{})["end_at"]; got != end {
		t.Errorf("get_sandbox reports end_at %v, want the session's own %s", got, end)
	}
	listed := c.ok("list_sandboxes", map[string]any{})["sandboxes"].([]any)
	if len(listed) != 1 {
		t.Fatalf("list_sandboxes: %v, want the one sandbox", listed)
	}
	if got := listed[0].(map[string]any)["end_at"]; got != end {
		t.Errorf("list_sandboxes reports end_at %v for the session's own sandbox, want %s", got, end)
	}
	n := h.fp.Journal().Len()
	c.ok("set_sandbox_timeout", map[string]any{"timeout": 900})
	got := journalFrom(h.fp, n)
	if len(got) != 1 || string(got[0].Body) != `{"timeout":3}` {
		t.Errorf("set_sandbox_timeout sent %v, want one {\"timeout\":3} (the lease)", got)
	}
	// The server stops renewing, as a killed one would: the platform's end
	// is at most a lease ahead, and a lease of platform time ends it.
	srv.deps.own.close()
	rec, _ = h.fp.Sandbox(id)
	if left := rec.EndAt.Sub(clock.Now()); left > lease {
		t.Errorf("after renewals stopped the platform end is %v ahead, want at most the lease %v", left, lease)
	}
	clock.Advance(lease + time.Nanosecond)
	if _, ok := h.fp.Sandbox(id); ok {
		t.Error("the unrenewed sandbox outlived the lease")
	}
}

// TestOwnerLeaseLongerThanAsked: when a session asks for no more than the
// owner lease, the platform holds the whole lifetime, and get_sandbox
// reports the platform's end as it is, also one changed behind the
// server's back (GET-1, GET-5): the default lease must not hide it.
func TestOwnerLeaseLongerThanAsked(t *testing.T) {
	clock := fakeprovider.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	h := newHarness(t, &harnessOptions{fake: &fakeprovider.Options{Clock: clock}})
	srv, err := New(&Deps{Platform: h.srv.deps.Platform, Instance: "leased-1", OwnerLease: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.deps.own.close)
	c := (&harness{t: t, fp: h.fp, srv: srv, logs: h.logs}).connect()
	t.Cleanup(c.drop)
	id := c.ok("create_sandbox", map[string]any{"timeout": 600})["sandbox_id"].(string)
	moved := clock.Now().Add(777 * time.Second).UTC()
	h.fp.SetEndAt(id, moved)
	got, err := time.Parse(time.RFC3339Nano, c.ok("get_sandbox", map[string]any{})["end_at"].(string))
	if err != nil || !got.Equal(moved) {
		t.Errorf("get_sandbox reports end_at %v (%v), want the platform's %v", got, err, moved)
	}
}
