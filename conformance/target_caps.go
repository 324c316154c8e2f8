package conformance

import (
	"context"
	"net/http/httptest"

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
