//go:build unix

package main

import "testing"

// SESSION-4 with a live sibling: only a process that finds no live process
// of its instance may sweep; a process started beside a live one (an MCP
// client's probe) must not.
func TestInstanceHoldSweepsOnlyWithoutLiveSibling(t *testing.T) {
	dir := t.TempDir()
	hold := func() instanceHold {
		t.Helper()
		h, err := holdInstance(dir, "replica-0")
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	first := hold()
	if !first.sweepAllowed() {
		t.Fatal("the only process of the instance may not sweep")
	}
	if err := first.share(); err != nil {
		t.Fatal(err)
	}
	probe := hold()
	if probe.sweepAllowed() {
		t.Error("a process started beside a live one may sweep: it would destroy the live one's sandboxes")
	}
	if err := probe.share(); err != nil {
		t.Fatal(err)
	}
	first.release()
	if third := hold(); third.sweepAllowed() {
		t.Error("a process started while the probe still lives may sweep")
	} else {
		third.release()
	}
	probe.release()
	if last := hold(); !last.sweepAllowed() {
		t.Error("with every process of the instance gone, a new one may not sweep what they left")
	} else {
		last.release()
	}
	if other, err := holdInstance(dir, "replica-1"); err != nil || !other.sweepAllowed() {
		t.Errorf("another instance's lock is shared with replica-0's: %v", err)
	}
}

// Item of SESSION-4 without an instance ID: a process started with a
// random ID leaves its lock file when it dies, and a later start finds it
// dead (no live process holds it); a live process's file is never found.
func TestDeadAnonymousFoundOnlyWhenDead(t *testing.T) {
	dir := t.TempDir()
	live, err := holdAnonymous(dir, "anon-live")
	if err != nil {
		t.Fatal(err)
	}
	defer live.forget()
	died, err := holdAnonymous(dir, "anon-died")
	if err != nil {
		t.Fatal(err)
	}
	died.release() // what the kernel does at SIGKILL: the lock goes, the file stays
	ended, err := holdAnonymous(dir, "anon-ended")
	if err != nil {
		t.Fatal(err)
	}
	ended.forget() // a clean exit with nothing left

	dead := deadAnonymous(dir, "anon-new")
	if len(dead) != 1 || dead[0].id != "anon-died" {
		t.Fatalf("dead instances %v, want only anon-died", deadIDs(dead))
	}
	if again := deadAnonymous(dir, "anon-other"); len(again) != 0 {
		t.Errorf("a dead instance being swept is found by a second starting process: %v", deadIDs(again))
	}
	dead[0].done(false) // the sweep did not finish: the next start tries again
	retry := deadAnonymous(dir, "anon-new")
	if len(retry) != 1 {
		t.Fatalf("after an unfinished sweep: %v", deadIDs(retry))
	}
	retry[0].done(true)
	if left := deadAnonymous(dir, "anon-new"); len(left) != 0 {
		t.Errorf("a swept instance is found again: %v", deadIDs(left))
	}
}

func deadIDs(d []*deadInstance) []string {
	out := make([]string, len(d))
	for i, x := range d {
		out[i] = x.id
	}
	return out
}
