package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// DefaultProviderID is the ID of the provider configured from the E2B_*
// environment variables. Its sandbox IDs are written bare.
const DefaultProviderID = "e2b"

// Environment variables read for the default provider.
const (
	EnvAPIKey     = "E2B_API_KEY"
	EnvDomain     = "E2B_DOMAIN"
	EnvAPIURL     = "E2B_API_URL"
	EnvSandboxURL = "E2B_SANDBOX_URL"
)

// DefaultDomain is the default provider's domain when E2B_DOMAIN is unset.
const DefaultDomain = "e2b.app"

// ProviderConfig describes one E2B-compatible provider. It never holds a
// credential: only the name of the environment variable that does.
type ProviderConfig struct {
	// ID names the provider in qualified sandbox IDs ("<id>:<sandbox>").
	ID string `json:"id"`
	// APIURL is the control-plane base URL, e.g. "https://api.e2b.app".
	APIURL string `json:"api_url"`
	// Domain is the sandbox domain used to reach in-sandbox daemons when the
	// platform reports none for a sandbox.
	Domain string `json:"domain"`
	// APIKeyEnv is the name of the environment variable holding the API key.
	APIKeyEnv string `json:"api_key_env"`
	// Regions maps a region name to that region's control-plane URL.
	Regions map[string]string `json:"regions,omitempty"`
	// DefaultRegion is reported as the region of sandboxes reached without
	// naming one; empty means unknown.
	DefaultRegion string `json:"default_region,omitempty"`
	// SizedSandboxes is true when the provider accepts CPU and memory per
	// sandbox on create; when false they are fixed per template and a
	// request for them fails before any call.
	SizedSandboxes bool `json:"sized_sandboxes,omitempty"`
	// SandboxURL, when set, is one URL for every sandbox's daemon: requests
	// then carry E2b-Sandbox-Id and E2b-Sandbox-Port headers instead of
	// using the "49983-<id>.<domain>" host.
	SandboxURL string `json:"sandbox_url,omitempty"`
	// Routes is the route family create and connect use: "v1" (POST
	// /sandboxes, POST /sandboxes/{id}/connect; the default) or "v2" (POST
	// /v2/sandboxes, POST /v2/sandboxes/{id}/connect, as e2b@2.x for JS
	// calls them). Every other operation has one route.
	Routes string `json:"routes,omitempty"`
}

// Route families of [ProviderConfig.Routes].
const (
	RoutesV1 = "v1"
	RoutesV2 = "v2"
)

// Config lists the providers beyond the default one. It is read from a JSON
// file with [LoadConfig].
type Config struct {
	Providers []ProviderConfig `json:"providers"`
}

// LoadConfig reads a provider configuration file. Unknown fields are
// rejected, so a credential pasted into the file (an "api_key" field, say)
// is refused rather than silently kept.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sandbox: read provider config: %w", err)
	}
	return ParseConfig(data)
}

// ParseConfig parses the JSON form of a provider configuration.
func ParseConfig(data []byte) (*Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var cfg Config
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("sandbox: parse provider config: %w", err)
	}
	seen := map[string]bool{}
	for i, pc := range cfg.Providers {
		if err := pc.validate(); err != nil {
			return nil, fmt.Errorf("sandbox: provider config entry %d: %w", i, err)
		}
		if seen[pc.ID] {
			return nil, fmt.Errorf("sandbox: provider config: duplicate provider %q", pc.ID)
		}
		seen[pc.ID] = true
	}
	return &cfg, nil
}

func (pc ProviderConfig) validate() error {
	if !providerIDPattern.MatchString(pc.ID) {
		return fmt.Errorf("provider id %q must match %s", pc.ID, providerIDPattern)
	}
	if err := checkBaseURL(pc.APIURL); err != nil {
		return fmt.Errorf("provider %q api_url: %w", pc.ID, err)
	}
	if pc.APIKeyEnv == "" {
		return fmt.Errorf("provider %q: api_key_env is required", pc.ID)
	}
	for region, u := range pc.Regions {
		if err := checkBaseURL(u); err != nil {
			return fmt.Errorf("provider %q region %q: %w", pc.ID, region, err)
		}
	}
	if pc.SandboxURL != "" {
		if err := checkBaseURL(pc.SandboxURL); err != nil {
			return fmt.Errorf("provider %q sandbox_url: %w", pc.ID, err)
		}
	}
	switch pc.Routes {
	case "", RoutesV1, RoutesV2:
	default:
		return fmt.Errorf("provider %q routes: want %q or %q", pc.ID, RoutesV1, RoutesV2)
	}
	return nil
}

// checkBaseURL accepts an absolute http(s) URL without credentials or query.
func checkBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("scheme must be http or https")
	}
	if u.Host == "" {
		return fmt.Errorf("host is missing")
	}
	if u.User != nil {
		return fmt.Errorf("credentials do not belong in a URL")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("query and fragment are not allowed")
	}
	return nil
}

// DefaultProvider builds the "e2b" provider from the environment:
// E2B_DOMAIN (default e2b.app), E2B_API_URL (default https://api.<domain>)
// and E2B_SANDBOX_URL; the key is read from E2B_API_KEY when a call is made.
func DefaultProvider(getenv func(string) string) (ProviderConfig, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	domain := strings.TrimSpace(getenv(EnvDomain))
	if domain == "" {
		domain = DefaultDomain
	}
	apiURL := strings.TrimSpace(getenv(EnvAPIURL))
	if apiURL == "" {
		apiURL = "https://api." + domain
	}
	pc := ProviderConfig{
		ID:         DefaultProviderID,
		APIURL:     strings.TrimRight(apiURL, "/"),
		Domain:     domain,
		APIKeyEnv:  EnvAPIKey,
		SandboxURL: strings.TrimRight(strings.TrimSpace(getenv(EnvSandboxURL)), "/"),
	}
	if err := pc.validate(); err != nil {
		return ProviderConfig{}, fmt.Errorf("sandbox: default provider from environment: %w", err)
	}
	return pc, nil
}
