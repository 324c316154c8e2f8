package sandbox

import (
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"
)

// DefaultRequestTimeout bounds each platform request when the caller's
// context has no earlier deadline.
const DefaultRequestTimeout = 60 * time.Second

// DefaultSandboxTimeout is the lifetime given to a new sandbox when the
// caller names none.
const DefaultSandboxTimeout = 300 * time.Second

// DefaultTemplate is the template of a new sandbox when the caller names none.
const DefaultTemplate = "base"

// Options configures a [Platform]. The zero value (or nil) gives defaults.
type Options struct {
	// Config lists providers beyond the default "e2b" one. A provider with
	// ID "e2b" here replaces the one built from the environment.
	Config *Config
	// Getenv reads environment variables; nil means os.Getenv.
	Getenv func(string) string
	// HTTPClient carries every request. Nil means a client with its own
	// transport. This is where a fake provider's in-process client or an
	// httpmock transport plugs in.
	HTTPClient *http.Client
	// RequestTimeout bounds each request when the context has no earlier
	// deadline. Zero means [DefaultRequestTimeout].
	RequestTimeout time.Duration
	// UserAgent is sent on every request. Empty means "sandboxkit".
	UserAgent string
	// MaxResponseBytes bounds a platform answer that is read whole: a
	// successful control-plane response, one Connect message of the
	// daemon. A larger one is refused unparsed, with
	// [CodeResponseTooLarge]. Zero means [DefaultMaxResponseBytes].
	MaxResponseBytes int
}

// DefaultMaxResponseBytes is [Options.MaxResponseBytes] when it is zero: no
// answer of the platform comes near it.
const DefaultMaxResponseBytes = 32 << 20

// Platform is the set of configured providers and the transport used to
// reach them. It is safe for concurrent use.
type Platform struct {
	providers       map[string]ProviderConfig
	defaultProvider string
	getenv          func(string) string
	httpClient      *http.Client
	requestTimeout  time.Duration
	userAgent       string
	maxResponse     int // Options.MaxResponseBytes
}

// RequestTimeout returns the bound on each platform request
// ([Options.RequestTimeout], or [DefaultRequestTimeout]): the provider
// deadline.
func (p *Platform) RequestTimeout() time.Duration { return p.requestTimeout }

// MaxResponseBytes returns the bound on a platform answer read whole
// ([Options.MaxResponseBytes], or [DefaultMaxResponseBytes]).
func (p *Platform) MaxResponseBytes() int { return p.maxResponse }

// NewPlatform checks the configuration and returns a Platform. Credentials
// are not read here but at each call, so a missing key is reported by the
// call that needs it.
func NewPlatform(opts *Options) (*Platform, error) {
	if opts == nil {
		opts = &Options{}
	}
	p := &Platform{
		providers:       map[string]ProviderConfig{},
		defaultProvider: DefaultProviderID,
		getenv:          opts.Getenv,
		httpClient:      opts.HTTPClient,
		requestTimeout:  opts.RequestTimeout,
		userAgent:       opts.UserAgent,
		maxResponse:     opts.MaxResponseBytes,
	}
	if p.maxResponse <= 0 {
		p.maxResponse = DefaultMaxResponseBytes
	}
	if p.getenv == nil {
		p.getenv = os.Getenv
	}
	if p.httpClient == nil {
		p.httpClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	if p.requestTimeout <= 0 {
		p.requestTimeout = DefaultRequestTimeout
	}
	if p.userAgent == "" {
		p.userAgent = "sandboxkit"
	}
	def, err := DefaultProvider(p.getenv)
	if err != nil {
		return nil, err
	}
	p.providers[def.ID] = def
	if opts.Config != nil {
		for _, pc := range opts.Config.Providers {
			if err := pc.validate(); err != nil {
				return nil, fmt.Errorf("sandbox: %w", err)
			}
			pc.APIURL = strings.TrimRight(pc.APIURL, "/")
			pc.SandboxURL = strings.TrimRight(pc.SandboxURL, "/")
			p.providers[pc.ID] = pc
		}
	}
	return p, nil
}

// Providers returns the configured provider IDs, sorted.
func (p *Platform) Providers() []string {
	ids := make([]string, 0, len(p.providers))
	for id := range p.providers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Provider returns a provider's configuration.
func (p *Platform) Provider(id string) (ProviderConfig, bool) {
	pc, ok := p.providers[id]
	return pc, ok
}

// HasCredentials reports whether the provider's API key variable is set.
func (p *Platform) HasCredentials(providerID string) bool {
	pc, ok := p.providers[providerID]
	return ok && strings.TrimSpace(p.getenv(pc.APIKeyEnv)) != ""
}

// CallOptions are the overrides every by-ID call accepts.
type CallOptions struct {
	// Provider selects the provider when the ID is bare; it must agree with
	// a "provider:" prefix when both are given.
	Provider string
	// Region selects one of the provider's regions.
	Region string
	// APIKey replaces the key read from the provider's environment variable.
	APIKey string
	// SandboxDomain is accepted for compatibility with the E2B SDKs and never
	// used: lifecycle calls route by the control-plane URL alone.
	SandboxDomain string
}

// endpoint is everything one call needs to reach one provider.
type endpoint struct {
	provider ProviderConfig
	apiURL   string
	apiKey   string
	region   string
}

// resolve picks the provider, region and credential for a call. Errors
// carry the category and field only.
func (p *Platform) resolve(op, providerID, region, apiKey string) (endpoint, error) {
	if providerID == "" {
		providerID = p.defaultProvider
	}
	pc, ok := p.providers[providerID]
	if !ok {
		return endpoint{}, invalidArgument(op, "provider")
	}
	ep := endpoint{provider: pc, apiURL: pc.APIURL, region: pc.DefaultRegion}
	if region != "" {
		u, ok := pc.Regions[region]
		if !ok {
			return endpoint{}, invalidArgument(op, "region")
		}
		ep.apiURL, ep.region = strings.TrimRight(u, "/"), region
	}
	ep.apiKey = apiKey
	if ep.apiKey == "" {
		ep.apiKey = strings.TrimSpace(p.getenv(pc.APIKeyEnv))
	}
	if ep.apiKey == "" {
		return endpoint{}, &Error{Op: op, Category: Unauthenticated}
	}
	return ep, nil
}

// resolveID parses a possibly qualified ID and resolves its endpoint.
func (p *Platform) resolveID(op, id string, opts *CallOptions) (QualifiedID, endpoint, error) {
	if opts == nil {
		opts = &CallOptions{}
	}
	q, err := p.ParseID(id)
	if err != nil {
		e := err.(*Error)
		e.Op = op
		return QualifiedID{}, endpoint{}, e
	}
	if opts.Provider != "" && strings.Contains(id, ":") && opts.Provider != q.Provider {
		return QualifiedID{}, endpoint{}, invalidArgument(op, "provider")
	}
	if opts.Provider != "" && !strings.Contains(id, ":") {
		if _, ok := p.providers[opts.Provider]; !ok {
			return QualifiedID{}, endpoint{}, invalidArgument(op, "provider")
		}
		q.Provider = opts.Provider
	}
	ep, err := p.resolve(op, q.Provider, opts.Region, opts.APIKey)
	return q, ep, err
}
