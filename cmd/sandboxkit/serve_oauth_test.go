package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oauth2-proxy/mockoidc"

	"github.com/sandboxkit/sandboxkit/internal/syncbuf"
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

// serve --oauth-issuer wires the resource server into HTTP: without a
// token /mcp answers 401 naming the metadata, which names the issuer.
func TestServeOAuthServes(t *testing.T) {
	issuer, err := mockoidc.Run()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = issuer.Shutdown() })
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncbuf.Buffer{}
	done := make(chan error, 1)
	cfg := serveConfig{logLevel: "info", fake: true, transferURLTTL: server.DefaultTransferURLTTL, httpAddr: "127.0.0.1:0", shutdownWait: time.Minute,
		oauth: serveOAuthConfig{issuer: issuer.Issuer(), audience: issuer.ClientID, resource: "https://mcp.example.test/mcp"}}
	go func() { done <- runServe(ctx, cfg, func(string) string { return "" }, logs) }()
	t.Cleanup(func() { cancel(); <-done })
	addr := regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`)
	var base string
	for deadline := time.Now().Add(2 * time.Minute); base == ""; time.Sleep(10 * time.Millisecond) {
		if m := addr.FindStringSubmatch(logs.String()); m != nil {
			base = "http://" + m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", logs.String())
		}
	}
	resp, err := http.Post(base+server.MCPPath, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if want := `resource_metadata="https://mcp.example.test/.well-known/oauth-protected-resource/mcp"`; resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), want) {
		t.Errorf("%d %q, want 401 with %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), want)
	}
	resp, err = http.Get(base + server.ProtectedResourceMetadataPath + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"authorization_servers":["`+issuer.Issuer()+`"]`) {
		t.Errorf("metadata %d %s", resp.StatusCode, body)
	}
}
