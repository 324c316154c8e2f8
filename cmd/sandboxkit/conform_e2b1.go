package main

import (
	"errors"

	"github.com/sandboxkit/sandboxkit/conformance"
)

// applyE2B1 sets cfg's e2b 1.x path from --e2b1 and --e2b1-debug-addrs.
func (f *conformFlags) applyE2B1(cfg *conformance.Config) error {
	path, addrs, err := e2b1Flags(f.e2b1, f.e2b1Addrs)
	if err != nil {
		return err
	}
	if path != "" && f.cloud {
		return errors.New("--e2b1 points a server at the fake; it has no meaning with --cloud")
	}
	cfg.E2B1, cfg.E2B1DebugAddrs = path, addrs
	return nil
}
