package main

import (
	"os"
	"path/filepath"
)

// instanceLockDir is where serve keeps one lock file per instance ID: the
// user's cache directory, else the temporary directory.
func instanceLockDir() string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "sandboxkit", "instances")
	}
	return filepath.Join(os.TempDir(), "sandboxkit-instances")
}

// instanceHold is a serve process's claim on its instance ID on this host:
// a lock on the instance's file that the kernel releases when the process
// ends, however it ends (SIGKILL, an OOM kill). It is the liveness lease of
// SESSION-4: a start sweep may destroy what an instance left only when no
// live process of that instance holds the lock. An MCP client that starts a
// second, short-lived process of the same instance (the TypeScript SDK v2's
// stdio probe does, on every connect) therefore never destroys the live
// sibling's sandboxes.
type instanceHold interface {
	// sweepAllowed reports whether this process was the only live one of
	// its instance when it started: what the instance left belongs to dead
	// processes only.
	sweepAllowed() bool
	// share holds the claim the way every live process does, once the
	// start sweep is over (waiting while a starting sibling sweeps).
	share() error
	// release gives the claim up (the process ending does too).
	release()
	// forget gives the claim up and removes the lock file: the process
	// ends with nothing of its instance left for a sweep.
	forget()
}

// deadInstance is an anonymous instance found dead, held exclusively.
type deadInstance struct {
	id   string
	path string
	f    *os.File
}

// done releases the instance; swept removes its lock file, so no later
// start looks at it again. An instance whose sweep did not finish keeps
// its file for the next start.
func (d *deadInstance) done(swept bool) {
	if swept {
		_ = os.Remove(d.path)
	}
	_ = d.f.Close()
}
