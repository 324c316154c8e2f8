//go:build !unix

package main

import "errors"

// holdInstance cannot tell a live sibling here: the caller does not sweep
// at start (run "sandboxkit sweep --orphans" for a dead instance).
func holdInstance(string, string) (instanceHold, error) {
	return nil, errors.ErrUnsupported
}

// holdAnonymous cannot tell a live process from a dead one here.
func holdAnonymous(string, string) (instanceHold, error) {
	return nil, errors.ErrUnsupported
}

// deadAnonymous finds nothing here: without a lock no instance is known
// to be dead.
func deadAnonymous(string, string) []*deadInstance { return nil }
