package conformance

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/server"
)

// principalTarget is a target the kit can reach as two principals
// (HANDLE-1): two bearer tokens of one deployment.
type principalTarget interface {
	// connectAs opens a connection as principal 0 or 1.
	connectAs(ctx context.Context, version string, principal int) (*clientConn, bool, error)
	// principalHTTP returns the endpoint and an HTTP client that speaks as
	// principal 0 or 1, for raw requests (HANDLE-4), or false without a
	// second principal.
	principalHTTP(principal int) (string, *http.Client, bool)
}

// The in-process reference server's principals: a listener of its own
// whose tokens name two principals (serve --tokens-file).
var inProcessTokens = [2]string{"sandboxkit-principal-a-token", "sandboxkit-principal-b-token"}

// kitPrincipals are the principals those tokens name.
var kitPrincipals = [2]string{"kit-a", "kit-b"}

func (t *inProcessTarget) connectAs(ctx context.Context, version string, principal int) (*clientConn, bool, error) {
	endpoint, hc, _ := t.principalHTTP(principal)
	conn, err := connectHTTPWith(ctx, endpoint, hc, version)
	return conn, true, err
}

// principalHTTP serves the two principals from a listener of their own,
// behind the variant's handler wrapper (as the protocol specs' endpoint).
func (t *inProcessTarget) principalHTTP(principal int) (string, *http.Client, bool) {
	t.principalOnce.Do(func() {
		o := t.httpOptions(&server.HTTPOptions{Tokens: map[string]string{inProcessTokens[0]: kitPrincipals[0], inProcessTokens[1]: kitPrincipals[1]}})
		h := t.srv.HTTPHandler(o)
		if b := t.breakage; b != nil && b.handler != nil {
			h = b.handler(h)
		}
		t.principalSrv = httptest.NewServer(h)
	})
	hc := &http.Client{Transport: headerTransport{headers: map[string]string{"Authorization": "Bearer " + inProcessTokens[principal]}, base: http.DefaultTransport}}
	return t.principalSrv.URL + server.MCPPath, hc, true
}

func (t *httpTarget) connectAs(ctx context.Context, version string, principal int) (*clientConn, bool, error) {
	endpoint, hc, ok := t.principalHTTP(principal)
	if !ok {
		return nil, false, nil
	}
	conn, err := connectHTTPWith(ctx, endpoint, hc, version)
	return conn, true, err
}

// principalHTTP speaks as the run's principal (its headers), or as the
// second one (--second-token in place of their Authorization).
func (t *httpTarget) principalHTTP(principal int) (string, *http.Client, bool) {
	if t.cfg.SecondToken == "" {
		return "", nil, false
	}
	headers := map[string]string{}
	for k, v := range t.cfg.Headers {
		headers[k] = v
	}
	if principal == 1 {
		headers["Authorization"] = "Bearer " + t.cfg.SecondToken
	}
	hc := &http.Client{Transport: headerTransport{headers: headers, base: http.DefaultTransport}}
	return t.cfg.ServerURL, hc, true
}

// connectHTTPWith opens a Streamable HTTP session through hc.
func connectHTTPWith(ctx context.Context, endpoint string, hc *http.Client, version string) (*clientConn, error) {
	transport := &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}
	cs, err := newClient().Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, fmt.Errorf("conformance: connect over HTTP: %w", err)
	}
	return &clientConn{cs: cs}, nil
}

// principals opens one connection as each of two principals, in the
// spec's era, or skips the spec as not applicable where the kit was given
// only one (a stdio server; a URL without --second-token).
func (tc *TestContext) principals(ctx context.Context) (*Session, *Session) {
	ginkgo.GinkgoHelper()
	pt, ok := tc.run.target.(principalTarget)
	var sessions [2]*Session
	for i := range sessions {
		if !ok {
			break
		}
		cctx, cancel := context.WithTimeout(ctx, tc.Config.CallTimeout)
		conn, has, err := pt.connectAs(cctx, tc.era.version(), i)
		cancel()
		if !has {
			ok = false
			break
		}
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "connect as principal %d", i+1)
		sessions[i] = &Session{tc: tc, conn: conn}
		tc.track(sessions[i])
	}
	if !ok {
		ginkgo.Skip(NotApplicablePrefix + ": the kit has one principal of this server; give a second bearer token (--second-token) to a server that declares principals")
	}
	return sessions[0], sessions[1]
}
