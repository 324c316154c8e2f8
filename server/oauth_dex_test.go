package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/internal/syncbuf"
)

// dexEnv names the Dex binary .ci/run builds from tools/dex (a module of
// its own, so Dex stays out of go.mod).
const dexEnv = "SANDBOXKIT_DEX"

// dexPasswordHash is the bcrypt hash of "password" from Dex's own example
// configuration.
const dexPasswordHash = "$2a$10$2b2cU8CPhOTaGrs1HRQuAueS7JTT5ZHsHSzYiFPm1leZck7Mc8T4W"

// dex is one Dex process on loopback: an authorization server with static
// clients and users, issuing JWTs by the password grant.
type dex struct {
	issuer string
}

// startDex runs Dex with an in-memory store on a free loopback port and
// waits for its discovery document. The port is found free, then bound by
// Dex: if another process took it meanwhile, Dex exits and a new port is
// tried.
func startDex(t *testing.T, bin string) *dex {
	t.Helper()
	var logs string
	for range 3 {
		d, out := tryStartDex(t, bin)
		if d != nil {
			return d
		}
		logs = out
	}
	t.Fatalf("dex exited before serving, three times; last output:\n%s", logs)
	return nil
}

// tryStartDex is one attempt of startDex: nil and Dex's output if Dex
// exited before serving its discovery document.
func tryStartDex(t *testing.T, bin string) (*dex, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // Dex binds it again
	issuer := "http://" + addr + "/dex"
	config := fmt.Sprintf(`issuer: %s
storage:
  type: memory
web:
  http: %s
oauth2:
  passwordConnector: local
  skipApprovalScreen: true
enablePasswordDB: true
staticClients:
  - id: sandboxkit-mcp
    secret: sandboxkit-mcp-secret
    name: sandboxkit
    redirectURIs: ['http://127.0.0.1/cb']
  - id: other-app
    secret: other-app-secret
    name: other
    redirectURIs: ['http://127.0.0.1/cb']
staticPasswords:
  - email: alice@example.test
    hash: %q
    username: alice
    userID: alice
  - email: bob@example.test
    hash: %q
    username: bob
    userID: bob
`, issuer, addr, dexPasswordHash, dexPasswordHash)
	path := filepath.Join(t.TempDir(), "dex.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "serve", path)
	var logs syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cancel(); <-exited })
	died := false
	waitFor(t, "Dex discovery", func() bool {
		select {
		case <-exited:
			died = true
			return true
		default:
		}
		resp, err := http.Get(issuer + "/.well-known/openid-configuration")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if died {
		return nil, logs.String()
	}
	return &dex{issuer: issuer}, ""
}

// token gets user's access token for client by the password grant.
func (d *dex) token(t *testing.T, client, user string) string {
	t.Helper()
	form := url.Values{"grant_type": {"password"}, "username": {user + "@example.test"}, "password": {"password"}, "scope": {"openid email"}}
	req, err := http.NewRequest(http.MethodPost, d.issuer+"/token", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(client, client+"-secret")
	resp, err := http.DefaultClient.Do(req)
	return accessToken(t, "dex token endpoint", resp, err)
}

// jwtSubject reads a JWT's "sub" without verifying it: the test's own
// view of what the server should take as the principal.
func jwtSubject(t *testing.T, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %d parts", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Sub == "" {
		t.Fatalf("no sub: %v", err)
	}
	return claims.Sub
}

// Against Dex, a real authorization server: discovery from a 401, a token
// by the password grant, a call accepted with principal = the token's sub;
// the wrong audience, an expired token, another issuer's token and a bad
// signature get 401 with resource_metadata; two users' sandboxes stay
// apart (HANDLE-1).
func TestOAuthAgainstDex(t *testing.T) {
	bin := os.Getenv(dexEnv)
	if bin == "" {
		if os.Getenv("SANDBOXKIT_DEX_REQUIRED") != "" {
			t.Fatalf("$%s is not set; .ci/run builds Dex from tools/dex", dexEnv)
		}
		t.Skipf("$%s is not set: .ci/run builds Dex from tools/dex and sets it", dexEnv)
	}
	h := newHarness(t, nil)
	d, other := startDex(t, bin), startDex(t, bin)
	oauth := func(audience string, now func() time.Time) *HTTPOptions {
		o, err := NewOAuth(t.Context(), OAuthConfig{Issuer: d.issuer, Audience: audience, Resource: testResource, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return &HTTPOptions{OAuth: o}
	}
	ts := serveHTTP(t, h, oauth("sandboxkit-mcp", nil))

	resp, _ := rawPost(t, httpClient(t, nil), ts.URL, "", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), nil)
	match := resourceMetadataParam.FindStringSubmatch(resp.Header.Get("WWW-Authenticate"))
	if resp.StatusCode != http.StatusUnauthorized || match == nil {
		t.Fatalf("no token: %d, want 401 with resource_metadata", resp.StatusCode)
	}
	var meta struct {
		AuthorizationServers []string `json:"authorization_servers"`
	}
	getJSON(t, ts.URL+strings.TrimPrefix(match[1], "https://mcp.example.test"), &meta)
	if len(meta.AuthorizationServers) != 1 || meta.AuthorizationServers[0] != d.issuer {
		t.Fatalf("metadata names %v, want Dex %s", meta.AuthorizationServers, d.issuer)
	}
	var discovery struct {
		TokenEndpoint string `json:"token_endpoint"`
	}
	getJSON(t, meta.AuthorizationServers[0]+"/.well-known/openid-configuration", &discovery)
	if discovery.TokenEndpoint != d.issuer+"/token" {
		t.Errorf("Dex token endpoint %q", discovery.TokenEndpoint)
	}

	aliceTok, bobTok := d.token(t, "sandboxkit-mcp", "alice"), d.token(t, "sandboxkit-mcp", "bob")
	alice, bob := connectModernHTTP(t, h, ts.URL, bearer(t, aliceTok)), connectModernHTTP(t, h, ts.URL, bearer(t, bobTok))
	id := alice.ok("create_sandbox", nil)["sandbox_id"].(string)
	if rec, _ := h.fp.Sandbox(id); rec.Metadata[PrincipalTagKey] != OAuthPrincipal(jwtSubject(t, aliceTok)) {
		t.Errorf("principal %q, want that of the token's sub %q", rec.Metadata[PrincipalTagKey], jwtSubject(t, aliceTok))
	}
	if te := bob.fail("get_sandbox", map[string]any{"sandbox_id": id}); te.Category != "not_found" {
		t.Errorf("bob reached alice's sandbox: %+v", te)
	}

	otherParts, aliceParts := strings.Split(other.token(t, "sandboxkit-mcp", "alice"), "."), strings.Split(aliceTok, ".")
	in48h := func() time.Time { return time.Now().Add(48 * time.Hour) } // past Dex's 24 h token lifetime
	for name, c := range map[string]struct {
		opts  *HTTPOptions
		token string
	}{
		"wrong audience": {nil, d.token(t, "other-app", "alice")},
		"expired":        {oauth("sandboxkit-mcp", in48h), aliceTok},
		"wrong issuer":   {nil, strings.Join(otherParts, ".")},
		"bad signature":  {nil, aliceParts[0] + "." + aliceParts[1] + "." + otherParts[2]},
	} {
		base := ts.URL
		if c.opts != nil {
			base = serveHTTP(t, h, c.opts).URL
		}
		resp, _ := rawPost(t, httpClient(t, nil), base, "", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), http.Header{"Authorization": {"Bearer " + c.token}})
		if resp.StatusCode != http.StatusUnauthorized || !resourceMetadataParam.MatchString(resp.Header.Get("WWW-Authenticate")) {
			t.Errorf("%s: %d %q, want 401 with resource_metadata", name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
}
