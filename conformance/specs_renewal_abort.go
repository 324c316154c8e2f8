package conformance

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An MCP client's ClientSession.Close waits for the calls it has in flight
// before it closes the transport, so a spec cannot close a session "while a
// call hangs" through Session.Close. TestContext.connectAbortable opens a session
// whose transport the spec can close at once, as a client that goes away
// (or crashes) mid-call does: in-process and stdio the server sees its
// input end, over HTTP it receives DELETE.
//
// It repeats the connect code of the three targets; a Session.Abort in the
// kit would replace it.

// lcCaptureTransport records the connection its inner transport opens.
type lcCaptureTransport struct {
	inner mcp.Transport

	mu   sync.Mutex
	conn mcp.Connection
}

func (t *lcCaptureTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err == nil {
		t.mu.Lock()
		t.conn = c
		t.mu.Unlock()
	}
	return c, err
}

// abort closes the transport now, whatever is in flight.
func (t *lcCaptureTransport) abort() error {
	t.mu.Lock()
	c := t.conn
	t.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.Close()
}

// connectAbortable opens a session like tc.Connect and returns it with a
// function that closes its transport immediately.
func (tc *TestContext) connectAbortable(ctx context.Context) (*Session, func() error, error) {
	cctx, cancel := context.WithTimeout(ctx, tc.Config.CallTimeout)
	defer cancel()
	var (
		inner mcp.Transport
		ended func(context.Context) error
	)
	switch t := tc.run.target.(type) {
	case *inProcessTarget:
		clientEnd, serverEnd := net.Pipe()
		serverT := &mcp.IOTransport{Reader: serverEnd, Writer: serverEnd, MaxLineLength: inProcessMaxMessage}
		done := make(chan error, 1)
		go func() { done <- t.srv.Run(t.ctx, serverT) }()
		inner = &mcp.IOTransport{Reader: clientEnd, Writer: clientEnd, MaxLineLength: inProcessMaxMessage}
		ended = func(ctx context.Context) error {
			select {
			case <-done:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	case *stdioTarget:
		inner = &mcp.CommandTransport{Command: t.command(), TerminateDuration: 5 * time.Second}
	case *httpTarget:
		inner = &mcp.StreamableClientTransport{
			Endpoint:             t.cfg.ServerURL,
			HTTPClient:           &http.Client{Transport: headerTransport{headers: t.cfg.Headers, base: http.DefaultTransport}},
			MaxRetries:           -1,
			DisableStandaloneSSE: true,
		}
	default:
		return nil, nil, fmt.Errorf("conformance: no abortable connection for target %T", tc.run.target)
	}
	capture := &lcCaptureTransport{inner: inner}
	cs, err := newClient().Connect(cctx, capture, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		_ = capture.abort()
		return nil, nil, fmt.Errorf("conformance: connect: %w", err)
	}
	s := &Session{tc: tc, conn: &clientConn{cs: cs, ended: ended}}
	tc.track(s)
	return s, capture.abort, nil
}
