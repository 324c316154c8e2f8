package server

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oauth2-proxy/mockoidc"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

// testResource is the canonical URL the tests' protected-resource metadata
// names; the tests fetch its path from the httptest server.
const testResource = "https://mcp.example.test/mcp"

// startIssuer runs a real OpenID provider (oauth2-proxy/mockoidc: discovery,
// JWKS, authorization code grant, RS256 JWTs) on loopback, signing with key
// (nil: mockoidc's default key).
func startIssuer(t *testing.T, key *rsa.PrivateKey) *mockoidc.MockOIDC {
	t.Helper()
	var m *mockoidc.MockOIDC
	var err error
	if key == nil {
		m, err = mockoidc.Run()
	} else if m, err = mockoidc.NewServer(key); err == nil {
		err = startMockOIDC(m)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown() })
	return m
}

func startMockOIDC(m *mockoidc.MockOIDC) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	return m.Start(ln, nil)
}

// issueToken gets an access token for subject from m by the authorization
// code grant, as a client would: authorize, follow nothing, trade the code.
func issueToken(t *testing.T, m *mockoidc.MockOIDC, subject string) string {
	t.Helper()
	m.QueueUser(&mockoidc.MockUser{Subject: subject, Email: subject + "@example.test"})
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	q := url.Values{"client_id": {m.ClientID}, "scope": {"openid"}, "state": {"s"}, "response_type": {"code"}, "redirect_uri": {"http://127.0.0.1/cb"}}
	resp, err := noRedirect.Get(m.AuthorizationEndpoint() + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		t.Fatalf("authorize: %d, no code", resp.StatusCode)
	}
	resp, err = http.PostForm(m.TokenEndpoint(), url.Values{
		"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
		"client_id": {m.ClientID}, "client_secret": {m.ClientSecret}, "redirect_uri": {"http://127.0.0.1/cb"},
	})
	return accessToken(t, "token endpoint", resp, err)
}

// accessToken reads the access token of a token endpoint's answer (RFC
// 6749 §5.1), failing the test when the request failed (err) or the
// answer holds none. what names the endpoint in the failure.
func accessToken(t *testing.T, what string, resp *http.Response, err error) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("%s: %d %v", what, resp.StatusCode, err)
	}
	return tok.AccessToken
}

// newTestOAuth verifies m's tokens for audience, logging into h's log.
func newTestOAuth(t *testing.T, h *harness, m *mockoidc.MockOIDC, audience string, now func() time.Time, scopes ...string) *OAuth {
	t.Helper()
	o, err := NewOAuth(t.Context(), OAuthConfig{
		Issuer: m.Issuer(), Audience: audience, Resource: testResource, Scopes: scopes, Now: now,
		Logger: slog.New(slog.NewJSONHandler(h.logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// bearer is an HTTP client that sends tok.
func bearer(t *testing.T, tok string) *http.Client {
	return httpClient(t, http.Header{"Authorization": {"Bearer " + tok}})
}

var resourceMetadataParam = regexp.MustCompile(`resource_metadata="([^"]+)"`)

// MCP basic/authorization: discovery from a 401, the protected-resource
// metadata naming the issuer, the issuer's discovery, a token, and a call
// that is accepted with the token's subject as principal (HANDLE-1).
func TestOAuthDiscoveryTokenCall(t *testing.T) {
	h := newHarness(t, nil)
	m := startIssuer(t, nil)
	ts := serveHTTP(t, h, &HTTPOptions{OAuth: newTestOAuth(t, h, m, m.ClientID, nil)})

	resp, _ := rawPost(t, httpClient(t, nil), ts.URL, "", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), nil)
	challenge := resp.Header.Get("WWW-Authenticate")
	match := resourceMetadataParam.FindStringSubmatch(challenge)
	if resp.StatusCode != http.StatusUnauthorized || match == nil {
		t.Fatalf("no token: %d %q, want 401 with resource_metadata", resp.StatusCode, challenge)
	}
	if want := "https://mcp.example.test" + ProtectedResourceMetadataPath + "/mcp"; match[1] != want {
		t.Errorf("resource_metadata %q, want %q (RFC 9728 §3.1)", match[1], want)
	}
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	for _, path := range []string{ProtectedResourceMetadataPath + "/mcp", ProtectedResourceMetadataPath} {
		getJSON(t, ts.URL+path, &meta)
		if meta.Resource != testResource || len(meta.AuthorizationServers) != 1 || meta.AuthorizationServers[0] != m.Issuer() {
			t.Errorf("%s: %+v, want resource %s and issuer %s", path, meta, testResource, m.Issuer())
		}
	}
	var discovery struct {
		TokenEndpoint string `json:"token_endpoint"`
	}
	getJSON(t, strings.TrimSuffix(meta.AuthorizationServers[0], "/")+"/.well-known/openid-configuration", &discovery)
	if discovery.TokenEndpoint != m.TokenEndpoint() {
		t.Errorf("issuer discovery names token endpoint %q", discovery.TokenEndpoint)
	}

	tok := issueToken(t, m, "alice")
	id := connectModernHTTP(t, h, ts.URL, bearer(t, tok)).ok("create_sandbox", nil)["sandbox_id"].(string)
	if rec, _ := h.fp.Sandbox(id); rec.Metadata[PrincipalTagKey] != "alice" {
		t.Errorf("principal in metadata %q, want the token's sub alice", rec.Metadata[PrincipalTagKey])
	}
	connectHTTP(t, h, ts.URL, bearer(t, tok)).ok("get_sandbox", map[string]any{"sandbox_id": id})
	if strings.Contains(h.logs.String(), tok) {
		t.Error("the log holds the token")
	}
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", u, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// Each check of a token, failing, gets 401 with resource_metadata and
// lets nothing through; the body says which check, never the token.
func TestOAuthRefusals(t *testing.T) {
	h := newHarness(t, nil)
	m := startIssuer(t, nil)
	other := startIssuer(t, nil) // same signing key, other issuer
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	forger := startIssuer(t, key)
	// The verifier's clock is two token lifetimes ahead of the issuer's.
	later := func() time.Time { return time.Now().Add(2 * m.AccessTTL) }
	good := issueToken(t, m, "alice")

	forged := issueToken(t, forger, "alice") // other key; claims made ours
	forgedParts, goodParts := strings.Split(forged, "."), strings.Split(good, ".")
	for name, c := range map[string]struct {
		opts   *HTTPOptions
		token  string
		reason string
	}{
		"wrong audience": {&HTTPOptions{OAuth: newTestOAuth(t, h, m, "https://other.example.test/mcp", nil)}, good, "wrong audience"},
		"expired":        {&HTTPOptions{OAuth: newTestOAuth(t, h, m, m.ClientID, later)}, good, "expired"},
		"wrong issuer":   {&HTTPOptions{OAuth: newTestOAuth(t, h, m, m.ClientID, nil)}, issueTokenFor(t, other, m.ClientID), "wrong issuer"},
		"bad signature":  {&HTTPOptions{OAuth: newTestOAuth(t, h, m, m.ClientID, nil)}, goodParts[0] + "." + goodParts[1] + "." + forgedParts[2], "bad signature"},
		"not a JWT":      {&HTTPOptions{OAuth: newTestOAuth(t, h, m, m.ClientID, nil)}, "opaque-token-0123456789", "malformed"},
	} {
		t.Run(name, func(t *testing.T) {
			ts := serveHTTP(t, h, c.opts)
			resp, body := rawPost(t, httpClient(t, nil), ts.URL, "", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), http.Header{"Authorization": {"Bearer " + c.token}})
			if resp.StatusCode != http.StatusUnauthorized || !resourceMetadataParam.MatchString(resp.Header.Get("WWW-Authenticate")) {
				t.Errorf("%d %q, want 401 with resource_metadata", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
			if !strings.Contains(string(body), c.reason) || strings.Contains(string(body), c.token) {
				t.Errorf("body %q: want the reason %q and not the token", body, c.reason)
			}
		})
	}
	if strings.Contains(h.logs.String(), good) {
		t.Error("the log holds a token")
	}
}

// issueTokenFor gets a token of m whose audience is clientID: m is told
// to use that client ID (the "wrong issuer" token is otherwise ours).
func issueTokenFor(t *testing.T, m *mockoidc.MockOIDC, clientID string) string {
	t.Helper()
	m.ClientID = clientID
	return issueToken(t, m, "alice")
}

// A token without the configured scopes gets 403 insufficient_scope, with
// the scopes and resource_metadata in the challenge.
func TestOAuthInsufficientScope(t *testing.T) {
	h := newHarness(t, nil)
	m := startIssuer(t, nil)
	ts := serveHTTP(t, h, &HTTPOptions{OAuth: newTestOAuth(t, h, m, m.ClientID, nil, "sandbox:run")})
	resp, _ := rawPost(t, httpClient(t, nil), ts.URL, "", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), http.Header{"Authorization": {"Bearer " + issueToken(t, m, "alice")}})
	got := resp.Header.Get("WWW-Authenticate")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(got, `error="insufficient_scope"`) || !strings.Contains(got, `scope="sandbox:run"`) || !resourceMetadataParam.MatchString(got) {
		t.Errorf("%d %q, want 403 insufficient_scope", resp.StatusCode, got)
	}
}

// HANDLE-1 with OAuth principals: bob's token reaches none of alice's
// sandboxes, and not her 2025 session.
func TestOAuthPrincipalsIsolated(t *testing.T) {
	h := newHarness(t, nil)
	m := startIssuer(t, nil)
	ts := serveHTTP(t, h, &HTTPOptions{OAuth: newTestOAuth(t, h, m, m.ClientID, nil)})
	aliceTok, bobTok := issueToken(t, m, "alice"), issueToken(t, m, "auth0|bob")
	alice, bob := connectModernHTTP(t, h, ts.URL, bearer(t, aliceTok)), connectModernHTTP(t, h, ts.URL, bearer(t, bobTok))
	id := alice.ok("create_sandbox", nil)["sandbox_id"].(string)
	unknown := bob.fail("get_sandbox", map[string]any{"sandbox_id": "nosuchsandbox000000000"})
	for name, args := range map[string]map[string]any{
		"get_sandbox":  {"sandbox_id": id},
		"run_command":  {"command": "true", "sandbox_id": id},
		"kill_sandbox": {"sandbox_id": id},
	} {
		if te := bob.fail(name, args); te.Category != sandbox.NotFound || te.HTTPStatus != unknown.HTTPStatus {
			t.Errorf("bob %s on alice's sandbox: %+v, want what an unknown one gets", name, te)
		}
	}
	bobs := bob.ok("create_sandbox", nil)["sandbox_id"].(string)
	if rec, _ := h.fp.Sandbox(bobs); rec.Metadata[PrincipalTagKey] != OAuthPrincipal("auth0|bob") {
		t.Errorf("bob's principal %q", rec.Metadata[PrincipalTagKey])
	}
	legacy := connectHTTP(t, h, ts.URL, bearer(t, aliceTok))
	legacy.ok("create_sandbox", nil)
	resp, _ := rawPost(t, httpClient(t, nil), ts.URL, legacy.cs.ID(), strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_sandbox","arguments":{}}}`), http.Header{"Authorization": {"Bearer " + bobTok}})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("bob in alice's session: %d, want 403", resp.StatusCode)
	}
	if _, ok := h.fp.Sandbox(id); !ok {
		t.Error("bob's kill reached alice's sandbox")
	}
}

// A subject that could not be sandbox metadata, or that looks like a hashed
// one, becomes a hash; no two subjects share a principal.
func TestOAuthPrincipal(t *testing.T) {
	seen := map[string]string{}
	for _, sub := range []string{"alice", "auth0|bob", "CiQwOGE4Njg0Yi1kYjg4LTRiNzMtOTBhOS0zY2QxNjYxZjU0NjYSBWxvY2Fs", "sha256-" + strings.Repeat("0", 40), OAuthPrincipal("auth0|bob"), "", strings.Repeat("x", 64)} {
		p := OAuthPrincipal(sub)
		if ValidateInstance(p) != nil {
			t.Errorf("%q → %q: not a valid principal", sub, p)
		}
		if prev, dup := seen[p]; dup {
			t.Errorf("%q and %q share %q", prev, sub, p)
		}
		seen[p] = sub
	}
	if OAuthPrincipal("alice") != "alice" {
		t.Error("a plain subject is not its own principal")
	}
}

// An issuer whose keys cannot be fetched is the server's trouble, not the
// token's: 500, never 401 (a client would throw a good token away).
func TestOAuthKeysUnavailable(t *testing.T) {
	h := newHarness(t, nil)
	m := startIssuer(t, nil)
	ts := serveHTTP(t, h, &HTTPOptions{OAuth: newTestOAuth(t, h, m, m.ClientID, nil)})
	tok := issueToken(t, m, "alice")
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}
	resp, body := rawPost(t, httpClient(t, nil), ts.URL, "", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), http.Header{"Authorization": {"Bearer " + tok}})
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), keysUnavailable) {
		t.Errorf("%d %q, want 500 %q", resp.StatusCode, body, keysUnavailable)
	}
}
