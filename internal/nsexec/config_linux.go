//go:build linux

package nsexec

import (
	"github.com/sandboxkit/sandboxkit/internal/fakeenvd"
)

// roleEnv names the role of a re-run program: roleInit for a sandbox's
// first process, roleEnvd for the daemon it starts.
const (
	roleEnv  = "SANDBOXKIT_NSEXEC_ROLE"
	roleInit = "init"
	roleEnvd = "envd"
)

// initConfig is what the host sends a sandbox's first process on stdin
// (never in the environment: it carries the access token).
type initConfig struct {
	RootFS string     `json:"rootfs"`
	Dir    string     `json:"dir"` // upper, work, merged and boot_id live here
	Envd   envdConfig `json:"envd"`
}

// envdConfig is the part of fakeenvd.Config a sandbox's daemon gets.
type envdConfig struct {
	SandboxID   string            `json:"sandboxId"`
	TemplateID  string            `json:"templateId"`
	AccessToken string            `json:"accessToken"`
	EnvVars     map[string]string `json:"envVars"`
}

func (c envdConfig) config() fakeenvd.Config {
	return fakeenvd.Config{SandboxID: c.SandboxID, TemplateID: c.TemplateID, AccessToken: c.AccessToken, EnvVars: c.EnvVars}
}

// readyLine is what the daemon writes on the status pipe once it serves.
const readyLine = "ready\n"
