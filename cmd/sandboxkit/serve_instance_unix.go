//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// flockHold is an instanceHold on a flock(2) lock: every live process of
// the instance holds it shared; a starting process that gets it exclusive
// (no one else holds it) may sweep, then keeps it shared like the rest.
type flockHold struct {
	f     *os.File
	sweep bool
}

// holdInstance claims instance in dir. An error means the claim could not
// be made (the directory is not writable): the caller must not sweep.
func holdInstance(dir, instance string) (instanceHold, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("instance lock: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, instance+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("instance lock: %w", err)
	}
	fd := int(f.Fd())
	h := &flockHold{f: f}
	switch err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); {
	case err == nil:
		h.sweep = true
	case errors.Is(err, unix.EWOULDBLOCK):
		// A live sibling holds it: share it, sweep nothing.
	default:
		_ = f.Close()
		return nil, fmt.Errorf("instance lock: %w", err)
	}
	return h, nil
}

// sweepAllowed reports whether the exclusive lock was had at start.
func (h *flockHold) sweepAllowed() bool { return h.sweep }

// share turns the start's exclusive lock into the shared one every live
// process holds (after the sweep), or takes the shared one, waiting while
// a starting sibling sweeps.
func (h *flockHold) share() error {
	return unix.Flock(int(h.f.Fd()), unix.LOCK_SH)
}

func (h *flockHold) release() { _ = h.f.Close() }
