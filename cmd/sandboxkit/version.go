package main

import (
	"runtime/debug"

	"github.com/sandboxkit/sandboxkit/conformance"
)

// buildVersion is the project version (the kit's, which the reference
// server shares), with the VCS revision the binary was built from as
// semver build metadata when the build recorded one:
// "0.1.0+7bb08bc6fa62" or "0.1.0+7bb08bc6fa62.dirty".
func buildVersion() string {
	v := conformance.Version
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = ".dirty"
			}
		}
	}
	if rev == "" {
		return v
	}
	return v + "+" + rev[:min(12, len(rev))] + dirty
}
