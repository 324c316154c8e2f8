package main

import (
	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/internal/fakeenvd"
)

// serveFakeDaemon builds the in-sandbox daemon of each fake sandbox: an
// in-memory filesystem and shell, no host process.
func serveFakeDaemon() func(fakeprovider.DaemonConfig) fakeprovider.Daemon {
	return func(c fakeprovider.DaemonConfig) fakeprovider.Daemon {
		return fakeenvd.New(fakeenvd.Config{SandboxID: c.SandboxID, AccessToken: c.AccessToken, EnvVars: c.EnvVars})
	}
}
