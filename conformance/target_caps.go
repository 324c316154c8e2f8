package conformance

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/server"
)

// capsTarget is a target that can serve a reference server of its own over
// Streamable HTTP with the session caps a spec declares, so the spec knows
// the policy it holds the server to (QUOTA-2, QUOTA-3).
type capsTarget interface {
	capsServer(o server.HTTPOptions) (endpoint string, stop func(), err error)
}

// capsServer serves a reference server of its own, with the HTTP options
// o (as the variant edits them, behind the variant's handler wrapper), on a
// loopback listener. stop shuts the server down, then the listener.
func (t *inProcessTarget) capsServer(o server.HTTPOptions) (string, func(), error) {
	srv, err := t.newServer()
	if err != nil {
		return "", nil, err
	}
	h := srv.HTTPHandler(t.httpOptions(&o))
	if b := t.breakage; b != nil && b.handler != nil {
		h = b.handler(h)
	}
	hs := httptest.NewServer(h)
	stop := func() {
		_ = srv.Shutdown(context.Background())
		hs.Close()
	}
	return hs.URL + server.MCPPath, stop, nil
}

// capsServer is a server at the session caps an eviction spec needs.
type capsServer struct {
	endpoint string
	// headers go with every request: the user's, to a server URL.
	headers map[string]string
	// limit is the cap on live sessions in force.
	limit int
	// own says the kit serves the server for the spec alone, so that every
	// session it holds is the spec's.
	own  bool
	stop func()
}

// capsEndpoint starts the target's server with the session caps o (o's
// MaxSessions is the cap), or takes the server URL at the cap its user
// declares ([Policies.MaxSessions]; with the client address header when o
// names one), or skips the spec where the kit knows no cap.
func capsEndpoint(tc *TestContext, o server.HTTPOptions) capsServer {
	ginkgo.GinkgoHelper()
	if ct, ok := tc.run.target.(capsTarget); ok {
		endpoint, stop, err := ct.capsServer(o)
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "start a server with small session caps")
		return capsServer{endpoint: endpoint, limit: o.MaxSessions, own: true, stop: stop}
	}
	p := tc.Config.declared()
	switch {
	case tc.Config.Kind() != TargetHTTP || p.MaxSessions <= 0:
		ginkgo.Skip("the eviction specs need a server at session caps the kit knows: " +
			"the in-process reference server, or a server URL with --max-sessions")
	case o.ClientIPHeader != "" && !strings.EqualFold(p.ClientIPHeader, o.ClientIPHeader):
		ginkgo.Skip("this spec sends its clients' addresses in " + o.ClientIPHeader +
			": declare that the server trusts it (--client-ip-header " + o.ClientIPHeader + ")")
	case o.ClientIPHeader != "" && hasHeader(tc.Config.Headers, "Authorization"):
		// QUOTA-3: a caller with a token is counted by its principal.
		ginkgo.Skip("this spec's clients are anonymous, told apart by address: with the Authorization header the kit sends, they would be one principal")
	}
	return capsServer{endpoint: tc.Config.ServerURL, headers: tc.Config.Headers, limit: p.MaxSessions, stop: func() {}}
}

// expect fails the spec with the message unless ok, at the kit's own
// server; at a server URL it skips instead: sessions the kit did not open
// may fill the declared cap there, and the kit cannot tell.
func (cs capsServer) expect(ok bool, format string, args ...any) {
	ginkgo.GinkgoHelper()
	if ok {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if cs.own {
		ginkgo.Fail(msg)
	}
	ginkgo.Skip("the server may hold sessions the kit did not open, at its declared cap: " + msg)
}

// hasHeader says whether headers hold name, in any case.
func hasHeader(headers map[string]string, name string) bool {
	for k := range headers {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// capsSession opens a Streamable HTTP session with cs as the client at
// address client (sent in X-Forwarded-For; "" sends none).
func capsSession(ctx context.Context, tc *TestContext, cs capsServer, client string) (*Session, error) {
	headers := map[string]string{}
	maps.Copy(headers, cs.headers)
	if client != "" {
		headers[forwardedFor] = client
	}
	hc := &http.Client{Transport: headerTransport{headers: headers, base: http.DefaultTransport}}
	cctx, cancel := context.WithTimeout(ctx, tc.Config.CallTimeout)
	defer cancel()
	conn, err := connectHTTPWith(cctx, cs.endpoint, hc, ProtocolVersion)
	if err != nil {
		return nil, err
	}
	s := &Session{tc: tc, conn: conn}
	tc.track(s)
	return s, nil
}
