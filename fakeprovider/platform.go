package fakeprovider

import (
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// APIURL is the control-plane URL that [Provider.PlatformOptions] points the
// SDK at. It never leaves the process: the Provider's in-process transport
// answers every host.
const APIURL = "https://api.fake.sandboxkit.test"

// PlatformOptions returns options for [sandbox.NewPlatform] wired to this
// Provider in-process: the default provider "e2b" reads this Provider's API
// key and [APIURL], and every request goes through [Provider.HTTPClient].
// The caller may set further fields (RequestTimeout, Config, a wrapping
// HTTPClient) before building the platform.
func (p *Provider) PlatformOptions() *sandbox.Options {
	env := p.PlatformEnv()
	return &sandbox.Options{
		Getenv:     func(k string) string { return env[k] },
		HTTPClient: p.HTTPClient(),
	}
}

// PlatformEnv returns the environment that points the SDK's default provider
// at this Provider in-process (E2B_API_KEY and E2B_API_URL). A Provider
// served on loopback ([Provider.Listen]) is reached with [Server.URL] as
// E2B_API_URL and E2B_SANDBOX_URL instead.
func (p *Provider) PlatformEnv() map[string]string {
	return map[string]string{
		sandbox.EnvAPIKey: p.APIKey(),
		sandbox.EnvAPIURL: APIURL,
	}
}

// Platform returns a [sandbox.Platform] wired to this Provider in-process, as
// [Provider.PlatformOptions] describes.
func (p *Provider) Platform() (*sandbox.Platform, error) {
	return sandbox.NewPlatform(p.PlatformOptions())
}
