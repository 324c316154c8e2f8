//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sandboxkit/sandboxkit/server"
)

// flockHold is an instanceHold on a flock(2) lock: every live process of
// the instance holds it shared; a starting process that gets it exclusive
// (no one else holds it) may sweep, then keeps it shared like the rest.
type flockHold struct {
	f     *os.File
	path  string
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
	h := &flockHold{f: f, path: f.Name()}
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

// anonPrefix starts the instance ID of a server started without one
// (server.New chooses "anon-<random>").
const anonPrefix = "anon-"

// holdAnonymous claims a fresh anonymous instance in dir for the life of
// the process. The lock file is made under a temporary name, locked, and
// only then renamed into place, so no other process ever finds it
// unlocked while this one lives.
func holdAnonymous(dir, instance string) (instanceHold, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("instance lock: %w", err)
	}
	f, err := os.CreateTemp(dir, ".new-*")
	if err != nil {
		return nil, fmt.Errorf("instance lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return nil, fmt.Errorf("instance lock: %w", err)
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, instance+".lock")); err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return nil, fmt.Errorf("instance lock: %w", err)
	}
	return &flockHold{f: f, path: filepath.Join(dir, instance+".lock")}, nil
}

// deadAnonymous returns the anonymous instances in dir that no live
// process holds: each one's process ended (SIGKILL included: the kernel
// dropped its lock) and left its lock file. The caller holds each one
// exclusively until it calls done, so two starting processes never sweep
// the same one at once.
func deadAnonymous(dir, self string) []*deadInstance {
	matches, _ := filepath.Glob(filepath.Join(dir, anonPrefix+"*.lock"))
	var out []*deadInstance
	for _, path := range matches {
		id := strings.TrimSuffix(filepath.Base(path), ".lock")
		if id == self || server.ValidateInstance(id) != nil {
			continue
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			continue // swept and removed meanwhile
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
			_ = f.Close() // alive, or another starting process is sweeping it
			continue
		}
		out = append(out, &deadInstance{id: id, path: path, f: f})
	}
	return out
}

// forget releases the claim and removes the lock file: the process ends
// with nothing of its instance left running.
func (h *flockHold) forget() {
	_ = os.Remove(h.path)
	h.release()
}
