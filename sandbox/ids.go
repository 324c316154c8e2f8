package sandbox

import (
	"regexp"
	"strings"
)

var (
	bareIDPattern     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)
	providerIDPattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)
)

// QualifiedID is a sandbox ID together with the provider it lives at.
type QualifiedID struct {
	Provider string // a configured provider ID
	ID       string // the bare ID the platform knows
}

// ParseID reads "provider:id" or a bare ID (meaning the default provider).
// An unknown provider, an empty ID or one with characters no platform uses
// is an invalid_argument error naming the field "sandbox_id" or "provider".
func (p *Platform) ParseID(s string) (QualifiedID, error) {
	const op = "parse sandbox ID"
	provider, bare, qualified := strings.Cut(s, ":")
	if !qualified {
		provider, bare = p.defaultProvider, s
	}
	if !bareIDPattern.MatchString(bare) {
		return QualifiedID{}, invalidArgument(op, "sandbox_id")
	}
	if _, ok := p.providers[provider]; !ok {
		return QualifiedID{}, invalidArgument(op, "provider")
	}
	return QualifiedID{Provider: provider, ID: bare}, nil
}

// FormatID writes an ID the way a caller must pass it back: bare for the
// default provider, "provider:id" for any other.
func (p *Platform) FormatID(q QualifiedID) string {
	if q.Provider == "" || q.Provider == p.defaultProvider {
		return q.ID
	}
	return q.Provider + ":" + q.ID
}

// String returns "provider:id".
func (q QualifiedID) String() string { return q.Provider + ":" + q.ID }
