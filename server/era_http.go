package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The modern fast path.
//
// go-sdk's stateless Streamable HTTP handler serves each modern request
// through a ServerSession of its own, built for the request and closed
// after it, and decodes the body about ten times on the way (to pick the
// session options, to read the batch, for the _meta version, for the
// Mcp-Name check, for x-mcp-header bindings, ...). Profiled on
// BenchmarkEras, that transport was the larger part of the modern era's
// extra CPU per call.
//
// The fast path serves the plain case of a modern request, one tools/call
// or tools/list whose headers go-sdk would accept, through one long-lived
// ServerSession of the same *mcp.Server over an in-process connection
// (modernConn): the body is decoded once by us and once by the session,
// and the same method handlers, middleware and per-request _meta checks
// (ServerSession.handle: clientCapabilities, -32022, removed methods) run
// as on stdio, where one session serves every modern request too. The
// session keeps no state of any request: it starts with neutral
// initialize parameters, so no client's _meta is ever stored in it, and
// each request's protocol version, capabilities and log level are read
// from its own _meta. Every other request (batches, notifications, other
// methods, any header the plain case does not have, a mismatch, a tool
// with x-mcp-header parameters) goes to the stateless handler, which
// answers it as before: the fast path only ever takes what that handler
// would have served the same way.

// modernMethods are the methods the fast path serves; anything else goes to
// go-sdk's stateless handler.
var modernMethods = map[string]bool{methodCallTool: true, "tools/list": true}

// modernFast is the fast path's long-lived session, started on first use.
type modernFast struct {
	server *mcp.Server
	// headerTools are the tools with x-mcp-header parameters, whose calls
	// go-sdk's transport checks against Mcp-Param-* headers.
	headerTools map[string]bool

	once sync.Once
	conn *modernConn // nil when the session could not start
}

func newModernFast(s *Server) *modernFast {
	f := &modernFast{server: s.mcp, headerTools: map[string]bool{}}
	for _, t := range s.tools {
		if b, err := json.Marshal(t.Def.InputSchema); err != nil || bytes.Contains(b, []byte("x-mcp-header")) {
			f.headerTools[t.Name()] = true
		}
	}
	return f
}

// session returns the connection of the long-lived session, starting it on
// first use; nil when it is not available (it failed to start, or the
// server shut it down).
func (f *modernFast) session() *modernConn {
	f.once.Do(func() {
		c := newModernConn()
		// Neutral initialize parameters: the session counts as initialized
		// from the start, so it never stores the _meta of the first request
		// it serves (ServerSession.handle does when it is not).
		_, err := f.server.Connect(context.Background(), c, &mcp.ServerSessionOptions{State: &mcp.ServerSessionState{
			InitializeParams: &mcp.InitializeParams{ProtocolVersion: ModernProtocolVersion},
		}})
		if err == nil {
			f.conn = c
		}
	})
	if f.conn == nil || f.conn.isClosed() {
		return nil
	}
	return f.conn
}

// serve answers r through the long-lived session when it is the plain case
// and reports whether it did; when it reports false, nothing was written and
// the request goes to the stateless handler.
func (f *modernFast) serve(w http.ResponseWriter, r *http.Request, body []byte) bool {
	req, ok := f.plain(r, body)
	if !ok {
		return false
	}
	c := f.session()
	if c == nil {
		return false
	}
	// The transport's RequestExtra: the principal travels in the header.
	req.Extra = &mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header}
	resp, data, ok := c.call(r.Context(), req)
	if !ok {
		return true // the client went away, or the server is shutting down
	}
	writeModernAnswer(w, resp, data)
	return true
}

// metaProtocolVersion is the _meta key naming a modern request's version.
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// plain decodes a modern request and reports whether it is the plain case
// the fast path serves: not a batch, a call of tools/call or tools/list,
// its _meta version the header's (a version this server serves), the
// Mcp-Method and Mcp-Name headers the body's, Accept naming both response
// types, no Last-Event-ID, and a tool without x-mcp-header parameters.
func (f *modernFast) plain(r *http.Request, body []byte) (*jsonrpc.Request, bool) {
	version := r.Header.Get("MCP-Protocol-Version")
	// go-sdk's DNS-rebinding check: a request that arrived on loopback
	// with another Host goes to the handler that refuses it.
	if arrivedOnLoopback(r) && !loopbackHost(r.Host) {
		return nil, false
	}
	if version != ModernProtocolVersion || len(r.Header.Values("Last-Event-ID")) > 0 || !acceptsBoth(r.Header.Values("Accept")) {
		return nil, false
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return nil, false
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() || !modernMethods[req.Method] || r.Header.Get("Mcp-Method") != req.Method {
		return nil, false
	}
	// Exact keys: go-sdk decodes params case-sensitively.
	var params map[string]json.RawMessage
	if json.Unmarshal(req.Params, &params) != nil {
		return nil, false
	}
	var meta map[string]json.RawMessage
	var metaVersion string
	if json.Unmarshal(params["_meta"], &meta) != nil || json.Unmarshal(meta[metaProtocolVersion], &metaVersion) != nil || metaVersion != version {
		return nil, false
	}
	if req.Method == methodCallTool {
		var name string
		if json.Unmarshal(params["name"], &name) != nil || name == "" || r.Header.Get("Mcp-Name") != name || f.headerTools[name] {
			return nil, false
		}
	}
	return req, true
}

// loopbackHost reports whether a Host header names a loopback host, as
// go-sdk's DNS-rebinding check reads it.
func loopbackHost(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = strings.Trim(host, "[]")
	}
	if h == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.IsLoopback()
}

// acceptsBoth reports whether Accept values name both application/json and
// text/event-stream (or wildcards covering them), as go-sdk requires.
func acceptsBoth(values []string) bool {
	jsonOK, streamOK := false, false
	for _, v := range values {
		for _, raw := range strings.Split(v, ",") {
			base, _, _ := strings.Cut(raw, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}

// writeModernAnswer writes a response as go-sdk's stateless handler does:
// a protocol-level error (SEP-2575) as a plain JSON body under its HTTP
// status, anything else as one SSE "message" event without an event ID
// (2026-07-28 has no resumption).
func writeModernAnswer(w http.ResponseWriter, resp *jsonrpc.Response, data []byte) {
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "text/event-stream")
	h.Set("Connection", "keep-alive")
	if status := modernErrorStatus(resp); status != 0 {
		h.Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(data)
		return
	}
	var b bytes.Buffer
	b.Grow(len("event: message\ndata: \n\n") + len(data))
	b.WriteString("event: message\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
	_, _ = w.Write(b.Bytes())
	_ = http.NewResponseController(w).Flush()
}

// modernErrorStatus is the HTTP status of a protocol-level error answer on
// 2026-07-28 (SEP-2575), as go-sdk maps it; 0 for any other answer.
func modernErrorStatus(resp *jsonrpc.Response) int {
	var jerr *jsonrpc.Error
	if resp.Error == nil || !errors.As(resp.Error, &jerr) {
		return 0
	}
	switch jerr.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities:
		return http.StatusBadRequest
	}
	return 0
}

// modernConn is the in-process mcp.Connection of the fast path's session.
// Each request gets an ID of its own on the way in (clients' IDs collide
// across requests) and its own ID back on the way out.
type modernConn struct {
	incoming chan jsonrpc.Message
	done     chan struct{}
	close    sync.Once
	next     atomic.Int64

	mu      sync.Mutex
	pending map[int64]chan *jsonrpc.Response
}

func newModernConn() *modernConn {
	return &modernConn{incoming: make(chan jsonrpc.Message), done: make(chan struct{}), pending: map[int64]chan *jsonrpc.Response{}}
}

// Connect implements mcp.Transport: the connection is its own transport.
func (c *modernConn) Connect(context.Context) (mcp.Connection, error) { return c, nil }

// Read implements mcp.Connection.
func (c *modernConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.incoming:
		return m, nil
	case <-c.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write implements mcp.Connection: a response goes to the request waiting
// for it. The session sends nothing else on this connection: a stateless
// server makes no requests of its client, and our tools send no
// notifications; anything else is dropped, as the stateless handler drops
// what has no stream to go to.
func (c *modernConn) Write(_ context.Context, msg jsonrpc.Message) error {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return nil
	}
	n, ok := resp.ID.Raw().(int64)
	if !ok {
		return nil
	}
	c.mu.Lock()
	ch := c.pending[n]
	delete(c.pending, n)
	c.mu.Unlock()
	if ch != nil {
		ch <- resp // buffered: the waiter may be gone
	}
	return nil
}

// Close implements mcp.Connection.
func (c *modernConn) Close() error {
	c.close.Do(func() { close(c.done) })
	return nil
}

// SessionID implements mcp.Connection: no session ID is ever minted.
func (c *modernConn) SessionID() string { return "" }

func (c *modernConn) isClosed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// errConnClosed is the session's connection being closed under a request.
var errConnClosed = errors.New("modern session closed")

// call hands req to the session under an ID of its own and returns the
// response, and its encoding, under the request's own ID. When ctx ends first (the
// client closed the response stream), the call is cancelled
// (streamable-http.mdx, "Cancellation") and ok is false.
func (c *modernConn) call(ctx context.Context, req *jsonrpc.Request) (*jsonrpc.Response, []byte, bool) {
	own := req.ID
	n := c.next.Add(1)
	id, err := jsonrpc.MakeID(float64(n))
	if err != nil {
		return nil, nil, false
	}
	ch := make(chan *jsonrpc.Response, 1)
	c.mu.Lock()
	c.pending[n] = ch
	c.mu.Unlock()
	req.ID = id
	if c.send(ctx, req) != nil {
		c.drop(n)
		return nil, nil, false
	}
	select {
	case resp := <-ch:
		resp.ID = own
		data, err := jsonrpc.EncodeMessage(resp)
		return resp, data, err == nil
	case <-ctx.Done():
		c.drop(n)
		c.cancel(n)
		return nil, nil, false
	case <-c.done:
		return nil, nil, false
	}
}

// send puts a message on the session's input.
func (c *modernConn) send(ctx context.Context, m jsonrpc.Message) error {
	select {
	case c.incoming <- m:
		return nil
	case <-c.done:
		return errConnClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *modernConn) drop(n int64) {
	c.mu.Lock()
	delete(c.pending, n)
	c.mu.Unlock()
}

// cancel tells the session that request n is cancelled: its handler's
// context ends, as the stateless handler's does when the stream closes.
func (c *modernConn) cancel(n int64) {
	params, err := json.Marshal(map[string]any{"requestId": n, "reason": "response stream closed"})
	if err != nil {
		return
	}
	go func() {
		_ = c.send(context.Background(), &jsonrpc.Request{Method: "notifications/cancelled", Params: params})
	}()
}
