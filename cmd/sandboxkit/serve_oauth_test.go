package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxkit/sandboxkit/server"
)

// The --oauth-* flags are refused with a message naming the clash before
// anything starts: OAuth excludes the tokens file and the token variable,
// needs --http and an audience, and its other flags need an issuer.
func TestServeOAuthFlagClashes(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("alice token-of-alice-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	issuer := serveOAuthConfig{issuer: "http://127.0.0.1:1/", audience: "https://mcp.example.test/mcp"}
	for name, c := range map[string]struct {
		cfg   serveConfig
		env   string
		wants []string
	}{
		"tokens file":         {serveConfig{httpAddr: "127.0.0.1:0", tokensFile: tokens, oauth: issuer}, "", []string{"--oauth-issuer", "--tokens-file", "cannot be combined"}},
		"token variable":      {serveConfig{httpAddr: "127.0.0.1:0", tokenEnv: "TOK", oauth: issuer}, "a-token-of-16-chars", []string{"--oauth-issuer", "$TOK", "cannot be combined"}},
		"stdio":               {serveConfig{oauth: issuer}, "", []string{"--oauth-issuer needs --http"}},
		"no audience":         {serveConfig{httpAddr: "127.0.0.1:0", oauth: serveOAuthConfig{issuer: issuer.issuer}}, "", []string{"needs --oauth-audience"}},
		"audience, no issuer": {serveConfig{httpAddr: "127.0.0.1:0", oauth: serveOAuthConfig{audience: "x"}}, "", []string{"need --oauth-issuer"}},
		"issuer unreachable":  {serveConfig{httpAddr: "0.0.0.0:0", oauth: issuer}, "", []string{"--oauth-issuer", "discovery"}},
	} {
		t.Run(name, func(t *testing.T) {
			c.cfg.logLevel, c.cfg.fake, c.cfg.transferURLTTL = "info", true, server.DefaultTransferURLTTL
			err := runServe(context.Background(), c.cfg, func(k string) string {
				if k == "TOK" {
					return c.env
				}
				return ""
			}, io.Discard)
			for _, want := range c.wants {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%v, want an error saying %q", err, want)
				}
			}
			if err != nil && c.env != "" && strings.Contains(err.Error(), c.env) {
				t.Error("the error holds the token")
			}
		})
	}
}
