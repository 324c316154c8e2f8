package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/spf13/pflag"

	"github.com/sandboxkit/sandboxkit/server"
)

// serveOAuthConfig is what the --oauth-* flags map to.
type serveOAuthConfig struct {
	issuer   string
	audience string
	resource string
	scopes   []string
}

// serveOAuthDiscoveryTimeout bounds reading the issuer's discovery document
// at start, and each later fetch of its keys.
const serveOAuthDiscoveryTimeout = 30 * time.Second

// serveOAuthHelp is the OAuth paragraph of serve --help.
const serveOAuthHelp = `OAuth. With --oauth-issuer URL and --oauth-audience AUD the HTTP server is
an OAuth 2.1 resource server (MCP authorization): every request to /mcp needs
"Authorization: Bearer JWT", a token of that issuer (its signature checked
against the issuer's JWKS, found by OpenID discovery at start), whose "aud"
holds AUD and which has not expired. The token's "sub" is the principal (a
"sub" that is not 1 to 63 letters, digits, '.', '_' or '-' becomes "sha256-"
and 40 hex digits). A refused token gets 401 with WWW-Authenticate: Bearer
resource_metadata="...", naming the RFC 9728 protected-resource metadata
served at /.well-known/oauth-protected-resource (and that path followed by
the resource's path). --oauth-resource is the MCP endpoint's public URL the
metadata names (default: AUD, which must then be a URL); with --oauth-scopes
a token lacking one gets 403 insufficient_scope. OAuth cannot be combined
with --tokens-file or a token in --token-env. Tokens are never logged.`

// addServeOAuthFlags declares the --oauth-* flags.
func addServeOAuthFlags(f *pflag.FlagSet, c *serveOAuthConfig) {
	f.StringVar(&c.issuer, "oauth-issuer", "", "OAuth/OpenID issuer URL whose JWT access tokens the HTTP server accepts (needs --oauth-audience; not with --tokens-file or --token-env)")
	f.StringVar(&c.audience, "oauth-audience", "", "value a token's \"aud\" must hold: the resource indicator (RFC 8707), usually the MCP endpoint URL, or the client ID the issuer puts there")
	f.StringVar(&c.resource, "oauth-resource", "", "public URL of the MCP endpoint named by the protected-resource metadata (default: --oauth-audience)")
	f.StringSliceVar(&c.scopes, "oauth-scopes", nil, "scopes every token must hold (comma-separated); a token without them gets 403 insufficient_scope")
}

// serveOAuth checks the --oauth-* flags against the other authentication
// flags and, with an issuer, reads its discovery document. Without one it
// returns nil.
func serveOAuth(ctx context.Context, cfg serveConfig, token string, logger *slog.Logger) (*server.OAuth, error) {
	c := cfg.oauth
	if c.issuer == "" {
		if c.audience != "" || c.resource != "" || len(c.scopes) > 0 {
			return nil, errors.New("--oauth-audience, --oauth-resource and --oauth-scopes need --oauth-issuer")
		}
		return nil, nil
	}
	switch {
	case cfg.httpAddr == "":
		return nil, errors.New("--oauth-issuer needs --http: stdio has one principal")
	case cfg.tokensFile != "":
		return nil, errors.New("--oauth-issuer and --tokens-file cannot be combined: choose OAuth tokens or a tokens file")
	case token != "":
		return nil, fmt.Errorf("--oauth-issuer and a bearer token in $%s cannot be combined: unset it, or drop --oauth-issuer", cfg.tokenEnv)
	case c.audience == "":
		return nil, errors.New("--oauth-issuer needs --oauth-audience: the value a token's \"aud\" must hold")
	}
	dctx, cancel := context.WithTimeout(ctx, serveOAuthDiscoveryTimeout)
	defer cancel()
	oauth, err := server.NewOAuth(dctx, server.OAuthConfig{
		Issuer: c.issuer, Audience: c.audience, Resource: c.resource, Scopes: c.scopes,
		HTTPClient: &http.Client{Timeout: serveOAuthDiscoveryTimeout},
		Logger:     logger,
	})
	if err != nil {
		return nil, fmt.Errorf("--oauth-issuer: %w", err)
	}
	return oauth, nil
}
