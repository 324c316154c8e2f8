//go:build !unix

package main

import "errors"

// holdInstance cannot tell a live sibling here: the caller does not sweep
// at start (run "sandboxkit sweep --orphans" for a dead instance).
func holdInstance(string, string) (instanceHold, error) {
	return nil, errors.ErrUnsupported
}
