package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// ProtectedResourceMetadataPath is where the RFC 9728 protected-resource
// metadata of an OAuth server is served; the same document is also served
// at this path followed by the resource's own path (RFC 9728 §3.1).
const ProtectedResourceMetadataPath = "/.well-known/oauth-protected-resource"

// OAuthConfig configures [NewOAuth]: the server as an OAuth 2.1 resource
// server (MCP basic/authorization) whose bearer tokens are JWTs signed by
// one issuer.
type OAuthConfig struct {
	// Issuer is the authorization server's issuer URL. Its OpenID
	// discovery document names the JWKS the tokens are verified against;
	// a token's "iss" must equal it.
	Issuer string
	// Audience must be one of a token's "aud" values: the resource
	// indicator (RFC 8707) clients ask tokens for, or the client ID an
	// issuer puts there.
	Audience string
	// Resource is the canonical URL of the MCP endpoint that the
	// protected-resource metadata names (for example
	// https://mcp.example.com/mcp). Empty means Audience, which must then
	// be an http(s) URL.
	Resource string
	// Scopes, when set, must all be granted by a token ("scope" or "scp"
	// claim); a token without them gets 403 insufficient_scope.
	Scopes []string
	// HTTPClient fetches discovery and keys. Nil means http.DefaultClient.
	HTTPClient *http.Client
	// Now is the clock a token's expiry is checked against. Nil means
	// time.Now.
	Now func() time.Time
	// Logger logs why a token was refused (never the token). Nil means no
	// log.
	Logger *slog.Logger
}

// OAuth verifies bearer tokens for [HTTPOptions.OAuth] and serves the
// protected-resource metadata.
type OAuth struct {
	cfg         OAuthConfig
	verifier    *oidc.IDTokenVerifier
	metadata    *oauthex.ProtectedResourceMetadata
	metadataURL string
}

// NewOAuth reads the issuer's discovery document (ctx bounds that fetch and
// the life of the key set) and returns a verifier of its tokens. The JWT
// signature, "iss", "aud" and "exp" are checked by go-oidc against the
// issuer's JWKS; no crypto is done here.
func NewOAuth(ctx context.Context, cfg OAuthConfig) (*OAuth, error) {
	if cfg.Issuer == "" || cfg.Audience == "" {
		return nil, errors.New("oauth: an issuer and an audience are required")
	}
	if cfg.Resource == "" {
		cfg.Resource = cfg.Audience
	}
	resource, err := url.Parse(cfg.Resource)
	if err != nil || (resource.Scheme != "https" && resource.Scheme != "http") || resource.Host == "" || resource.Fragment != "" {
		return nil, fmt.Errorf("oauth: the resource %q must be an absolute http(s) URL without a fragment", cfg.Resource)
	}
	if cfg.HTTPClient != nil {
		ctx = oidc.ClientContext(ctx, cfg.HTTPClient)
	}
	provider, err := oidc.NewProvider(ctx, cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("oauth: discovery of issuer %s: %w", cfg.Issuer, err)
	}
	return &OAuth{
		cfg:      cfg,
		verifier: provider.Verifier(&oidc.Config{ClientID: cfg.Audience, Now: cfg.Now}),
		metadata: &oauthex.ProtectedResourceMetadata{
			Resource:               cfg.Resource,
			AuthorizationServers:   []string{cfg.Issuer},
			ScopesSupported:        cfg.Scopes,
			BearerMethodsSupported: []string{"header"},
			ResourceName:           "sandboxkit",
		},
		metadataURL: metadataURL(resource),
	}, nil
}

// metadataURL is where RFC 9728 §3.1 puts the metadata of resource: the
// well-known path inserted between its host and its path.
func metadataURL(resource *url.URL) string {
	u := url.URL{Scheme: resource.Scheme, Host: resource.Host, Path: ProtectedResourceMetadataPath + strings.TrimSuffix(resource.Path, "/")}
	return u.String()
}

// MetadataURL is the resource_metadata URL the 401 answers name.
func (o *OAuth) MetadataURL() string { return o.metadataURL }

// register serves the protected-resource metadata at the well-known path,
// with and without the resource's path and MCPPath as suffix.
func (o *OAuth) register(mux *http.ServeMux) {
	h := auth.ProtectedResourceMetadataHandler(o.metadata)
	paths := []string{ProtectedResourceMetadataPath, ProtectedResourceMetadataPath + MCPPath}
	if u, err := url.Parse(o.metadataURL); err == nil && !slices.Contains(paths, u.Path) {
		paths = append(paths, u.Path)
	}
	for _, p := range paths {
		mux.Handle(p, h)
	}
}

// gate authenticates a request by its bearer token, then hands it to next
// with the token's principal in principalHeader and in auth.TokenInfo, the
// same way a tokens-file principal goes (HANDLE-1). A missing or invalid
// token gets 401 and WWW-Authenticate with resource_metadata (MCP
// basic/authorization, RFC 9728 §5.1); a token without the configured
// scopes gets 403 insufficient_scope.
func (o *OAuth) gate(next http.Handler) http.Handler {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := auth.TokenInfoFromContext(r.Context())
		if missing := missingScopes(o.cfg.Scopes, info.Scopes); len(missing) > 0 {
			o.logRefusal(r.Context(), "insufficient_scope")
			w.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer error=\"insufficient_scope\", scope=%q, resource_metadata=%q", strings.Join(o.cfg.Scopes, " "), o.metadataURL))
			http.Error(w, "Forbidden: insufficient scope", http.StatusForbidden)
			return
		}
		r.Header.Set(principalHeader, info.UserID)
		r.Header.Del(holdHeader)
		next.ServeHTTP(w, r)
	})
	return auth.RequireBearerToken(o.verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: o.metadataURL})(inner)
}

// verify is the auth.TokenVerifier: go-oidc checks the signature against
// the issuer's JWKS, "iss", "aud" and "exp". The error says only which
// check failed; neither it nor the log carries the token.
func (o *OAuth) verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	tok, err := o.verifier.Verify(ctx, token)
	if err != nil {
		reason := refusalReason(err)
		o.logRefusal(ctx, reason)
		if reason == keysUnavailable {
			return nil, errors.New(reason)
		}
		return nil, fmt.Errorf("%w: %s", auth.ErrInvalidToken, reason)
	}
	var claims struct {
		Scope json.RawMessage `json:"scope"`
		Scp   json.RawMessage `json:"scp"`
	}
	if err := tok.Claims(&claims); err != nil {
		o.logRefusal(ctx, "claims")
		return nil, fmt.Errorf("%w: claims", auth.ErrInvalidToken)
	}
	if tok.Subject == "" {
		o.logRefusal(ctx, "no subject")
		return nil, fmt.Errorf("%w: no subject", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{
		UserID:     OAuthPrincipal(tok.Subject),
		Scopes:     append(scopeList(claims.Scope), scopeList(claims.Scp)...),
		Expiration: tok.Expiry,
	}, nil
}

// refusalReason names the check a token failed, for the 401 body and the
// log: go-oidc's own message quotes claims, so only a fixed label leaves
// here. The labels are read from go-oidc's messages; the decision to
// refuse is go-oidc's alone, a label that does not match is "malformed".
func refusalReason(err error) string {
	var expired *oidc.TokenExpiredError
	msg := err.Error()
	switch {
	case errors.As(err, &expired):
		return "expired"
	case strings.Contains(msg, "different provider"):
		return "wrong issuer"
	case strings.Contains(msg, "audience"):
		return "wrong audience"
	case strings.Contains(msg, "nbf"):
		return "not yet valid"
	case strings.Contains(msg, "get keys") || strings.Contains(msg, "fetching keys"):
		return keysUnavailable
	case strings.Contains(msg, "signature"):
		return "bad signature"
	default:
		return "malformed"
	}
}

// keysUnavailable is the refusal reason when the issuer's JWKS could not
// be read: the server's trouble, not the token's, so 500 rather than 401.
const keysUnavailable = "issuer keys unavailable"

func (o *OAuth) logRefusal(ctx context.Context, reason string) {
	if o.cfg.Logger != nil {
		o.cfg.Logger.InfoContext(ctx, "oauth: bearer token refused", "reason", reason)
	}
}

// scopeList reads a scope claim: a space-separated string (RFC 9068
// "scope") or an array of strings ("scp" of some issuers).
func scopeList(raw json.RawMessage) []string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.Fields(s)
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return list
	}
	return nil
}

// missingScopes lists the scopes of want that granted lacks.
func missingScopes(want, granted []string) []string {
	var missing []string
	for _, s := range want {
		if !slices.Contains(granted, s) {
			missing = append(missing, s)
		}
	}
	return missing
}

// oauthHashedPrefix marks a principal derived from a subject by its hash.
const oauthHashedPrefix = "sha256-"

// OAuthPrincipal is the principal of a token's subject (HANDLE-1). The
// principal is written into sandbox metadata, so a subject that is not
// already 1 to 63 letters, digits, '.', '_' or '-' (Auth0's "auth0|…",
// Dex's base64) becomes "sha256-" and 40 hex digits of its SHA-256; so does
// a subject that itself starts with "sha256-", so that no subject can take
// another's principal. With one issuer per server, the subject alone names
// the user.
func OAuthPrincipal(subject string) string {
	if ValidateInstance(subject) == nil && !strings.HasPrefix(subject, oauthHashedPrefix) {
		return subject
	}
	sum := sha256.Sum256([]byte(subject))
	return oauthHashedPrefix + hex.EncodeToString(sum[:20])
}
