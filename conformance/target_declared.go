package conformance

import (
	"context"
	"net/http"
	"net/http/httptest"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

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

// policyServer is where a spec of a declared policy runs: a reference
// server of the kit's own that declares it (in-process), or the server
// under test, whose user declares it (conform --own-sandboxes-only,
// --sandboxes-per-principal).
type policyServer struct {
	// own: the kit's own server, at the policy the kit chose.
	own bool
	// connect opens a connection at version as the kit's principal 0 or 1.
	connect func(ctx context.Context, version string, principal int) (*clientConn, error)
}

// declaredEndpoint starts a server of the target's own with the policy
// declare sets (flag names it), or takes the server under test where
// userDeclared, reached as principals of it (1, or 2: then the target
// needs a second principal), or skips the spec as not applicable.
func declaredEndpoint(tc *TestContext, flag string, userDeclared bool, principals int, declare func(*server.Deps)) *policyServer {
	ginkgo.GinkgoHelper()
	if dt, ok := tc.run.target.(declaredTarget); ok {
		ds, err := dt.declaredServer(declare)
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "start a server with %s", flag)
		ginkgo.DeferCleanup(ds.stop)
		return &policyServer{own: true, connect: func(ctx context.Context, version string, principal int) (*clientConn, error) {
			return connectHTTPWith(ctx, ds.endpoint, ds.client(principal), version)
		}}
	}
	if !userDeclared {
		ginkgo.Skip(NotApplicablePrefix + ": the server's " + flag + " is not declared (declare it with conform " + flag +
			"; in-process the kit serves a reference server of its own with it)")
	}
	ps := &policyServer{connect: func(ctx context.Context, version string, _ int) (*clientConn, error) {
		return tc.target.connect(ctx, version)
	}}
	if principals < 2 {
		return ps
	}
	pt, ok := tc.run.target.(principalTarget)
	if ok {
		_, _, ok = pt.principalHTTP(1)
	}
	if !ok {
		ginkgo.Skip(NotApplicablePrefix + ": this spec of " + flag + " needs two principals of the server, and the kit knows one " +
			"(a server URL with --second-token-file has two)")
	}
	ps.connect = func(ctx context.Context, version string, principal int) (*clientConn, error) {
		conn, _, err := pt.connectAs(ctx, version, principal)
		return conn, err
	}
	return ps
}

// declaredSession opens a connection at version with ps as the kit's
// principal 0 or 1.
func declaredSession(ctx context.Context, tc *TestContext, ps *policyServer, principal int, version string) *Session {
	ginkgo.GinkgoHelper()
	cctx, cancel := context.WithTimeout(ctx, tc.Config.CallTimeout)
	defer cancel()
	conn, err := ps.connect(cctx, version, principal)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "connect to the declared server as principal %d", principal+1)
	s := &Session{tc: tc, conn: conn}
	tc.track(s)
	return s
}
