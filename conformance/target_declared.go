package conformance

import (
	"context"
	"net/http"
	"net/http/httptest"

	"github.com/sandboxkit/sandboxkit/server"
)

// declaredTarget is a target that can serve a reference server of its own
// with a policy the kit declares (an option of serve), reached as the
// kit's two principals, so the kit knows the policy it holds it to:
// HANDLE-6's confinement, QUOTA-4's per-principal cap.
type declaredTarget interface {
	declaredServer(declare func(*server.Deps)) (*declaredServer, error)
}

// declaredServer is a reference server of the kit's own, over Streamable
// HTTP on a loopback listener, with the kit's two principals' tokens.
type declaredServer struct {
	endpoint string
	stop     func()
}

// client speaks as the kit's principal 0 or 1.
func (d *declaredServer) client(principal int) *http.Client {
	return &http.Client{Transport: headerTransport{headers: map[string]string{"Authorization": "Bearer " + inProcessTokens[principal]}, base: http.DefaultTransport}}
}

// declaredServer starts a reference server whose dependencies declare
// what declare sets (then as the variant edits them), behind the variant's
// middleware. stop shuts the server down, then the listener.
func (t *inProcessTarget) declaredServer(declare func(*server.Deps)) (*declaredServer, error) {
	deps := *t.deps // New gives the copy its own ownership and lease state
	declare(&deps)
	if b := t.breakage; b != nil && b.deps != nil {
		b.deps(&deps)
	}
	srv, err := server.New(&deps, &server.Options{Name: "sandboxkit-reference", Version: Version})
	if err != nil {
		return nil, err
	}
	if b := t.breakage; b != nil && b.middleware != nil {
		srv.MCPServer().AddReceivingMiddleware(b.middleware(t.benv))
	}
	o := t.httpOptions(&server.HTTPOptions{Tokens: map[string]string{inProcessTokens[0]: kitPrincipals[0], inProcessTokens[1]: kitPrincipals[1]}})
	hs := httptest.NewServer(srv.HTTPHandler(o))
	stop := func() {
		_ = srv.Shutdown(context.Background())
		hs.Close()
	}
	return &declaredServer{endpoint: hs.URL + server.MCPPath, stop: stop}, nil
}
