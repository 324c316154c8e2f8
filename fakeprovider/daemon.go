package fakeprovider

import "github.com/sandboxkit/sandboxkit/internal/fakeenvd"

// InMemoryDaemon is the default daemon of every fake sandbox: the fake envd
// with an in-memory filesystem (home /home/user) and a shell whose commands
// are Go built-ins, so no host process is ever started.
func InMemoryDaemon(c DaemonConfig) Daemon {
	return fakeenvd.New(fakeenvd.Config{SandboxID: c.SandboxID, TemplateID: c.TemplateID, AccessToken: c.AccessToken, EnvVars: c.EnvVars})
}
