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
