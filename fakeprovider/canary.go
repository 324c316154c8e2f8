package fakeprovider

import (
	"slices"
	"strings"
	"sync"
)

// Canary kinds: the middle word of every canary, naming where it was planted.
const (
	canaryEnvdToken    = "envd"
	canaryTrafficToken = "traffic"
	canaryDomain       = "domain"
	canaryClientID     = "client"
	canaryMetadata     = "meta"
	canaryEnvVar       = "env"
	canaryError        = "err"
	canaryBody         = "body"
)

// Names of the extra entries planted in every sandbox's metadata and envVars.
const (
	// CanaryMetadataKey is the metadata key whose value is a canary.
	CanaryMetadataKey = "sandboxkit-canary"
	// CanaryEnvVar is the environment variable whose value is a canary.
	CanaryEnvVar = "SANDBOXKIT_CANARY"
)

// canaryBook issues canaries and remembers every one.
type canaryBook struct {
	mu     sync.Mutex
	issued []string
}

// issue returns a new canary "canary-<kind>-<24 hex>" and records it. Every
// canary is a valid DNS label.
func (b *canaryBook) issue(kind string) string {
	c := "canary-" + kind + "-" + randomHex(12)
	b.mu.Lock()
	b.issued = append(b.issued, c)
	b.mu.Unlock()
	return c
}

// issueCompact returns a new canary without dashes, "canary<kind><24 hex>",
// and records it: for values a client splits on "-", as E2B SDK 1.x does
// with the clientID it appends to sandbox IDs ("<id>-<clientID>").
func (b *canaryBook) issueCompact(kind string) string {
	c := "canary" + kind + randomHex(12)
	b.mu.Lock()
	b.issued = append(b.issued, c)
	b.mu.Unlock()
	return c
}

// all returns a copy of every canary issued so far.
func (b *canaryBook) all() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.issued)
}

// Canaries returns every secret the fake has handed out so far: the API key
// and each canary ("canary-<kind>-<hex>", or "canary<kind><hex>" for
// clientIDs, which carry no dash) planted in envdAccessToken,
// trafficAccessToken and malformed bodies and, with [Options.Canaries], in
// domain (the domain's first label), clientID, the [CanaryMetadataKey]
// metadata entry, the [CanaryEnvVar] environment variable and error messages. A test scans any text for
// each of them to detect a leak.
func (p *Provider) Canaries() []string {
	return append([]string{p.apiKey}, p.canaries.all()...)
}

// CanaryMode reports whether the leak detectors a client can see are on
// ([Options.Canaries]).
func (p *Provider) CanaryMode() bool { return p.canaryMode }

// FindCanary returns the first canary (or the API key) that text contains,
// ignoring case, and whether there was one.
func (p *Provider) FindCanary(text string) (string, bool) {
	lower := strings.ToLower(text)
	for _, c := range p.Canaries() {
		if c != "" && strings.Contains(lower, strings.ToLower(c)) {
			return c, true
		}
	}
	return "", false
}
