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
func TestOwnerLease(t *testing.T) {
	h := newHarness(t, nil)
	const lease = MinOwnerLease
	srv, err := New(&Deps{Platform: h.srv.deps.Platform, Instance: "leased-0", OwnerLease: lease}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := (&harness{t: t, fp: h.fp, srv: srv, logs: h.logs}).connect()
	t.Cleanup(c.drop)
	start := time.Now()
	out := c.ok("create_sandbox", map[string]any{"timeout": 600})
	id := out["sandbox_id"].(string)
	rec, _ := h.fp.Sandbox(id)
	if left := time.Until(rec.EndAt); left > lease+time.Second {
		t.Errorf("platform end %v ahead, want at most the lease %v", left.Round(time.Second), lease)
	}
	reportedEnd := func(m map[string]any) time.Duration {
		end, err := time.Parse(time.RFC3339Nano, m["end_at"].(string))
		if err != nil {
			t.Fatal(err)
		}
		return end.Sub(start)
	}
	if d := reportedEnd(out); d < 599*time.Second || d > 601*time.Second {
		t.Errorf("create_sandbox reports end_at %v after create, want the 600 s asked for", d)
	}
	before := h.fp.Journal().Count(sandbox.OpSetTimeout)
	idle := time.Now()
	time.Sleep(2 * lease)
	renewals := h.fp.Journal().Count(sandbox.OpSetTimeout) - before
	perMinute := float64(renewals) / time.Since(idle).Minutes()
	t.Logf("lease renewals of an idle session: %d in %v = %.0f per sandbox-minute at lease %v (%.1f at a 2m lease)",
		renewals, time.Since(idle).Round(time.Millisecond), perMinute, lease, perMinute*lease.Seconds()/120)
	if renewals < 2 || renewals > 7 {
		t.Errorf("%d renewals in two leases, want about 6 (one per third of the lease)", renewals)
	}
	if _, ok := h.fp.Sandbox(id); !ok {
		t.Fatalf("the sandbox ended after two leases of a live server: the lease was not renewed")
	}
	if d := reportedEnd(c.ok("get_sandbox", map[string]any{})); d < 599*time.Second || d > 601*time.Second {
		t.Errorf("get_sandbox reports end_at %v after create, want the 600 s asked for", d)
	}
	listed := c.ok("list_sandboxes", map[string]any{})["sandboxes"].([]any)
	if len(listed) != 1 {
		t.Fatalf("list_sandboxes: %v, want the one sandbox", listed)
	}
	if d := reportedEnd(listed[0].(map[string]any)); d < 599*time.Second || d > 601*time.Second {
		t.Errorf("list_sandboxes reports end_at %v after create for the session's own sandbox, want the 600 s asked for", d)
	}
	n := h.fp.Journal().Len()
	c.ok("set_sandbox_timeout", map[string]any{"timeout": 900})
	got := journalFrom(h.fp, n)
	if len(got) != 1 || string(got[0].Body) != `{"timeout":3}` {
		t.Errorf("set_sandbox_timeout sent %v, want one {\"timeout\":3} (the lease)", got)
	}
	// The server stops renewing, as a killed one would.
	srv.deps.own.close()
	stopped := time.Now()
	waitForWithin(t, "the unrenewed sandbox ends", lease+2*time.Second, func() bool { _, ok := h.fp.Sandbox(id); return !ok })
	t.Logf("unrenewed sandbox gone %v after renewals stopped (lease %v)", time.Since(stopped).Round(time.Millisecond), lease)
}

// waitForWithin polls cond until it holds or limit passes.
func waitForWithin(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
