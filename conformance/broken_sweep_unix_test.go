//go:build unix

package conformance

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// holdTestInstance is the stdio harness's liveness claim on its instance,
// as serve holds one (cmd/sandboxkit serve_instance_unix.go): a flock the
// kernel drops when the process ends. sweep reports whether the process
// may sweep (no live process of the instance held the lock); share turns
// the claim into the shared lock every live process holds (waiting while
// a starting sibling sweeps); the caller closes lock when it ends. Any
// error: no sweep.
func holdTestInstance(instance string) (lock *os.File, sweep bool, share func()) {
	dir := filepath.Join(os.TempDir(), "sandboxkit-test-instances")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, func() {}
	}
	f, err := os.OpenFile(filepath.Join(dir, instance+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, func() {}
	}
	fd := int(f.Fd())
	sweep = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil
	return f, sweep, func() { _ = unix.Flock(fd, unix.LOCK_SH) }
}
