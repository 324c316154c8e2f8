package conformance

import (
	"context"
	"net/http"
	"net/http/httptest"

	"github.com/sandboxkit/sandboxkit/server"
)

// confinedTarget is a target that can serve a reference server of its own
// that declares HANDLE-6 (serve --own-sandboxes-only), reached as one
// principal of a token, so the kit knows the policy it holds it to.
type confinedTarget interface {
	confinedServer() (endpoint string, hc *http.Client, stop func(), err error)
}

// confinedServer serves a reference server of its own, confined to own
// sandboxes (as the variant edits its dependencies), over Streamable HTTP
// on a loopback listener, with the kit's first principal's token.
func (t *inProcessTarget) confinedServer() (string, *http.Client, func(), error) {
	deps := *t.deps // New gives the copy its own ownership and lease state
	deps.OwnSandboxesOnly = true
	if b := t.breakage; b != nil && b.deps != nil {
		b.deps(&deps)
	}
	srv, err := server.New(&deps, &server.Options{Name: "sandboxkit-reference", Version: Version})
	if err != nil {
		return "", nil, nil, err
	}
	if b := t.breakage; b != nil && b.middleware != nil {
		srv.MCPServer().AddReceivingMiddleware(b.middleware(t.benv))
	}
	o := t.httpOptions(&server.HTTPOptions{Tokens: map[string]string{inProcessTokens[0]: kitPrincipals[0]}})
	hs := httptest.NewServer(srv.HTTPHandler(o))
	hc := &http.Client{Transport: headerTransport{headers: map[string]string{"Authorization": "Bearer " + inProcessTokens[0]}, base: http.DefaultTransport}}
	stop := func() {
		_ = srv.Shutdown(context.Background())
		hs.Close()
	}
	return hs.URL + server.MCPPath, hc, stop, nil
}
