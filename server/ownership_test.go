package server

import (
	"context"
	"strings"
	"testing"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
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
