package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/semaphore"
)

// HTTP paths.
const (
	// MCPPath serves Streamable HTTP.
	MCPPath = "/mcp"
	// HealthPath answers 200 "ok" without authentication.
	HealthPath = "/healthz"
)

// Defaults of [HTTPOptions].
const (
	// DefaultSessionTimeout is how long an HTTP session may stay idle
	// before it is closed and its sandboxes destroyed.
	DefaultSessionTimeout = 30 * time.Minute
	// DefaultMaxSessions is how many Streamable HTTP sessions may be live at
	// once.
	DefaultMaxSessions = 1000
	// DefaultReadTimeout bounds reading one request's headers, and its body.
	DefaultReadTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds each write of a response to a client.
	DefaultWriteTimeout = 30 * time.Second
	// DefaultConnIdleTimeout closes a keep-alive connection idle this long
	// (see [Server.HTTPServer]).
	DefaultConnIdleTimeout = 2 * time.Minute
	// DefaultMaxSessionsPerClient is how many live sessions one client
	// (see [HTTPOptions.ClientIPHeader]) may hold: enough for any one
	// agent, and far below [DefaultMaxSessions], so that one client
	// cannot lock the others out.
	DefaultMaxSessionsPerClient = 64
	// DefaultMaxSessionsPerPrincipal is how many live sessions one
	// authenticated principal may hold, from any number of addresses.
	DefaultMaxSessionsPerPrincipal = 64
	// DefaultMaxEnvelopeBytes bounds every request except the arguments
	// of a tools/call (initialize, ping, notifications, and the rest of a
	// tools/call): what an idle session may keep of its last request.
	DefaultMaxEnvelopeBytes = 256 << 10
	// DefaultMaxInFlightBytes bounds the request bytes held at once across
	// the server (about four of the largest uploads).
	DefaultMaxInFlightBytes = 96 << 20
	// DefaultInFlightWait is how long a large request waits for room in
	// the in-flight budget before it is refused with 503 and Retry-After.
	DefaultInFlightWait = 15 * time.Second
	// DefaultEvictIdle is how long a session must have been idle (no
	// request in flight, none received) before it may be closed to make
	// room for a new session when the server is full.
	DefaultEvictIdle = time.Minute
)

// HTTPOptions configures [Server.HTTPHandler]. A nil *HTTPOptions selects
// every default.
type HTTPOptions struct {
	// Token, when not empty, must be sent as "Authorization: Bearer <token>"
	// on every request to MCPPath; it is compared in constant time. When
	// empty, requests that did not arrive on a loopback address are refused.
	Token string
	// Tokens maps more bearer tokens to the principal each one
	// authenticates (HANDLE-1): a sandbox or command_id that a modern
	// request of one principal created is not_found to every other. Token,
	// when set, is one more, of principal [TokenPrincipal]. Without any
	// token the one principal is [LocalPrincipal]. See [ParseTokens].
	Tokens map[string]string
	// OAuth, when set, makes the server an OAuth 2.1 resource server
	// (oauth.go): requests need a JWT of its issuer and audience, and a
	// token's subject is its principal. Token and Tokens are then unused.
	OAuth *OAuth
	// SessionTimeout closes a session that has received no request for this
	// long (its owned sandboxes are destroyed). Zero means
	// [DefaultSessionTimeout]; negative means never.
	SessionTimeout time.Duration
	// MaxRequestBodyBytes bounds a request body (413 beyond). Zero means
	// room for the largest upload_file call.
	MaxRequestBodyBytes int64
	// MaxSessions caps the Streamable HTTP sessions live at once; a request
	// that would open one more is refused with 503 and a JSON-RPC error
	// saying so. Zero means [DefaultMaxSessions]; negative means no cap.
	MaxSessions int
	// MaxSessionsPerClient caps the live sessions of one client; beyond it
	// a new session is refused with 429. A session counts against its
	// client from the moment it is established (its initialize answered),
	// so a connection that never finishes its body holds no slot. Zero
	// means [DefaultMaxSessionsPerClient]; negative means no cap beyond
	// MaxSessions.
	MaxSessionsPerClient int
	// MaxSessionsPerPrincipal caps the live sessions of one authenticated
	// principal (a token's); beyond it a new session is refused with 429.
	// Anonymous callers (no token) count by address under
	// MaxSessionsPerClient instead. Zero means
	// [DefaultMaxSessionsPerPrincipal]; negative means no cap beyond
	// MaxSessions.
	MaxSessionsPerPrincipal int
	// ClientIPHeader, when set, names a request header that a trusted
	// reverse proxy in front of the server sets to the client's address
	// (for example X-Forwarded-For, whose last element is used, or
	// X-Real-IP). Without it, or when the header holds no address, the
	// client is the connection's remote address. IPv6 clients are keyed by
	// their /64 prefix, so that one host cannot rotate addresses.
	ClientIPHeader string
	// MaxEnvelopeBytes bounds every request other than the arguments of a
	// tools/call (413 beyond). Zero means [DefaultMaxEnvelopeBytes].
	MaxEnvelopeBytes int64
	// MaxInFlightBytes bounds the request bytes held at once across the
	// server, and the answers of inline downloads until they are written
	// (responsehold.go); a large request waits up to InFlightWait for
	// room, then is refused with 503 and Retry-After, a download with a
	// rate_limited tool error. Zero means
	// [DefaultMaxInFlightBytes] (raised to MaxRequestBodyBytes if that is
	// larger); negative means no bound.
	MaxInFlightBytes int64
	// InFlightWait is how long a request waits for the in-flight budget.
	// Zero means [DefaultInFlightWait].
	InFlightWait time.Duration
	// EvictIdle is how long a session must have been idle before it may be
	// closed (its sandboxes destroyed) to make room when MaxSessions is
	// reached; the longest idle goes first. Zero means
	// [DefaultEvictIdle]; negative means never evict.
	EvictIdle time.Duration
	// ReadTimeout bounds reading a request's body (and, in
	// [Server.HTTPServer], its headers): a client that sends slower is cut
	// off. Zero means [DefaultReadTimeout]; negative means no bound.
	ReadTimeout time.Duration
	// WriteTimeout bounds each write of a response: a client that stops
	// reading is cut off, so a stalled connection cannot hold a call's
	// result or the server's memory. It does not bound how long a tool
	// call or an idle event stream lasts. Zero means [DefaultWriteTimeout];
	// negative means no bound.
	WriteTimeout time.Duration

	// statelessOnly sends every modern request to go-sdk's stateless
	// handler, bypassing the fast path (era_http.go): for tests that
	// compare the two.
	statelessOnly bool
}

// withDefaults returns a copy of o with defaults filled in.
func (o *HTTPOptions) withDefaults(l Limits) HTTPOptions {
	c := HTTPOptions{}
	if o != nil {
		c = *o
	}
	switch {
	case c.SessionTimeout == 0:
		c.SessionTimeout = DefaultSessionTimeout
	case c.SessionTimeout < 0:
		c.SessionTimeout = 0 // the SDK's "never"
	}
	if c.MaxRequestBodyBytes == 0 {
		c.MaxRequestBodyBytes = int64(maxMessageBytes(l))
	}
	if c.MaxSessions == 0 {
		c.MaxSessions = DefaultMaxSessions
	}
	if c.MaxSessionsPerClient == 0 {
		c.MaxSessionsPerClient = DefaultMaxSessionsPerClient
	}
	if c.MaxSessionsPerPrincipal == 0 {
		c.MaxSessionsPerPrincipal = DefaultMaxSessionsPerPrincipal
	}
	if c.MaxEnvelopeBytes == 0 {
		c.MaxEnvelopeBytes = DefaultMaxEnvelopeBytes
	}
	c.MaxEnvelopeBytes = min(c.MaxEnvelopeBytes, c.MaxRequestBodyBytes)
	if c.MaxInFlightBytes == 0 {
		c.MaxInFlightBytes = max(DefaultMaxInFlightBytes, c.MaxRequestBodyBytes)
	}
	if c.MaxInFlightBytes > 0 {
		c.MaxInFlightBytes = max(c.MaxInFlightBytes, c.MaxRequestBodyBytes)
	}
	if c.InFlightWait == 0 {
		c.InFlightWait = DefaultInFlightWait
	}
	if c.EvictIdle == 0 {
		c.EvictIdle = DefaultEvictIdle
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	return c
}

// HTTPServer returns an *http.Server that serves [Server.HTTPHandler] with
// the connection-level bounds that a handler cannot set itself: request
// headers must arrive within ReadTimeout (a client that trickles them is
// cut off), header blocks are limited to 64 KiB, and keep-alive
// connections idle for [DefaultConnIdleTimeout] are closed. Set its Addr,
// or pass it a listener.
func (s *Server) HTTPServer(opts *HTTPOptions) *http.Server {
	o := opts.withDefaults(s.deps.Limits)
	hs := &http.Server{
		Handler:        s.HTTPHandler(opts),
		IdleTimeout:    DefaultConnIdleTimeout,
		MaxHeaderBytes: 64 << 10,
	}
	if o.ReadTimeout > 0 {
		hs.ReadHeaderTimeout = o.ReadTimeout
	}
	return hs
}

// HTTPHandler returns the Streamable HTTP handler (at [MCPPath]) and the
// health check (at [HealthPath]). It serves the same *mcp.Server as stdio
// (TOOLS-2). DNS-rebinding protection stays on: a request that arrives on a
// loopback address with a non-loopback Host header is refused.
func (s *Server) HTTPHandler(opts *HTTPOptions) http.Handler {
	o := opts.withDefaults(s.deps.Limits)
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Logger:              s.sdkLogger,
		SessionTimeout:      o.SessionTimeout,
		MaxRequestBodyBytes: o.MaxRequestBodyBytes,
	})
	stateless := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Logger:              s.sdkLogger,
		Stateless:           true,
		MaxRequestBodyBytes: o.MaxRequestBodyBytes,
		// A closed response stream cancels the modern request
		// (streamable-http.mdx, "Cancellation").
		PropagateRequestCancellation: true,
	})
	fast := newModernFast(s)
	keys := tokenKeys(o)
	budget := &byteBudget{size: o.MaxInFlightBytes, wait: o.InFlightWait}
	if o.MaxInFlightBytes > 0 {
		budget.sem = semaphore.NewWeighted(o.MaxInFlightBytes)
	}
	// serve handles an authenticated request.
	serve := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w, r, done := s.slowClientBounds(w, r, o)
		defer done()
		if isModernVersion(r.Header.Get("MCP-Protocol-Version")) {
			s.serveModern(w, r, o, budget, fast, stateless)
			return
		}
		id := r.Header.Get("Mcp-Session-Id")
		switch r.Method {
		case http.MethodDelete:
			s.endHTTPSession(id, r.Header.Get(principalHeader))
			streamable.ServeHTTP(w, r)
			return
		case http.MethodPost:
		default:
			if id != "" {
				defer s.reg.http.active(id)()
			}
			streamable.ServeHTTP(w, r)
			return
		}
		// The SDK would answer these without reading the body; so do we.
		if baseMediaTypeOf(r.Header.Get("Content-Type")) != "application/json" {
			streamable.ServeHTTP(w, r)
			return
		}
		// Read and check the whole body first: a client that trickles it
		// holds no session slot meanwhile.
		p, rf := s.readPost(r, o, budget)
		if rf != nil {
			rf.write(w)
			return
		}
		defer s.releasePost(p)
		defer s.holdResponse(r, budget)()
		r.Body = io.NopCloser(bytes.NewReader(p.body))
		r.ContentLength = int64(len(p.body))
		// Shutdown lets the requests the SDK is handling answer first.
		s.httpCalls.add()
		defer s.httpCalls.done()
		if id != "" {
			defer s.reg.http.active(id)()
			streamable.ServeHTTP(w, r)
			return
		}
		// A POST without a session ID may open a session: reserve a slot
		// until it is established (or not).
		client, limit, byPrincipal := sessionKey(r, o)
		ok, perClient := s.reg.http.reserve(client, o.MaxSessions, limit, o.EvictIdle)
		if !ok {
			s.refuseSession(w, perClient, byPrincipal, o)
			return
		}
		defer s.reg.http.release(client)
		streamable.ServeHTTP(w, r)
		if sid := w.Header().Get("Mcp-Session-Id"); sid != "" {
			s.reg.http.bind(sid, client)
		}
	})
	// withUser puts the principal into the request's auth.TokenInfo too,
	// so that the SDK binds each legacy session to its principal (HANDLE-4) and
	// answers another principal's use of its Mcp-Session-Id with 403.
	withUser := auth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: r.Header.Get(principalHeader)}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(serve)
	var mcpHandler http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		principal := LocalPrincipal
		if len(keys) == 0 {
			if !arrivedOnLoopback(r) {
				http.Error(w, "Forbidden: this server accepts only loopback connections without a token", http.StatusForbidden)
				return
			}
		} else if p, ok := bearerPrincipal(r, keys); ok {
			principal = p
		} else {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sandboxkit"`)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		// HANDLE-1: the tool handler reads the principal from here; a
		// value the client sent is replaced. The response hold is the
		// front end's to name (holdResponse), never the client's.
		r.Header.Set(principalHeader, principal)
		r.Header.Del(holdHeader)
		if len(keys) > 0 {
			withUser.ServeHTTP(w, r)
			return
		}
		serve.ServeHTTP(w, r)
	})
	mux := http.NewServeMux()
	if o.OAuth != nil {
		mcpHandler = o.OAuth.gate(serve)
		o.OAuth.register(mux)
	}
	mux.Handle(MCPPath, http.NewCrossOriginProtection().Handler(mcpHandler))
	mux.HandleFunc("GET "+HealthPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}

// serveModern hands a modern request (by its MCP-Protocol-Version header)
// to the fast path's long-lived session (the plain case, era_http.go) or
// else to the stateless handler of the same *mcp.Server, behind the same
// authentication, Host/Origin checks, body caps and in-flight budget as a
// legacy one. It mints no session ID and counts against no session cap;
// GET and DELETE get 405 from the stateless handler (TOOLS-4).
func (s *Server) serveModern(w http.ResponseWriter, r *http.Request, o HTTPOptions, budget *byteBudget, fast *modernFast, stateless http.Handler) {
	// A modern request has no session: a session ID it carries is ignored.
	r.Header.Del("Mcp-Session-Id")
	if r.Method != http.MethodPost || baseMediaTypeOf(r.Header.Get("Content-Type")) != "application/json" {
		stateless.ServeHTTP(w, r)
		return
	}
	p, rf := s.readPost(r, o, budget)
	if rf != nil {
		rf.write(w)
		return
	}
	defer s.releasePost(p)
	defer s.holdResponse(r, budget)()
	r.Body = io.NopCloser(bytes.NewReader(p.body))
	r.ContentLength = int64(len(p.body))
	s.httpCalls.add()
	defer s.httpCalls.done()
	// The plain case skips go-sdk's per-request session (era_http.go).
	if !o.statelessOnly && fast.serve(w, r, p.body) {
		return
	}
	stateless.ServeHTTP(w, r)
}

// holdResponse opens the request's hold on the in-flight budget for its
// response (responsehold.go) and names it in [holdHeader]; the returned
// function, called once the SDK has written the response, gives back what
// the hold reserved.
func (s *Server) holdResponse(r *http.Request, budget *byteBudget) func() {
	tok, h := s.holds.open(budget)
	r.Header.Set(holdHeader, tok)
	return func() { s.holds.close(tok, h) }
}

// refuseSession answers a request that would open a session beyond a cap:
// 429 (this client's cap) or 503 (the server's), with a JSON-RPC error
// that says which cap and what to do.
func (s *Server) refuseSession(w http.ResponseWriter, perClient, byPrincipal bool, o HTTPOptions) {
	status, msg := http.StatusServiceUnavailable,
		"too many live sessions on this server (limit "+itoa(o.MaxSessions)+"); retry later"
	switch {
	case perClient && byPrincipal:
		status, msg = http.StatusTooManyRequests,
			"too many live sessions of this principal (limit "+itoa(o.MaxSessionsPerPrincipal)+
				"); end one with HTTP DELETE, or wait for an idle one to time out"
	case perClient:
		status, msg = http.StatusTooManyRequests,
			"too many live sessions from this client (limit "+itoa(o.MaxSessionsPerClient)+
				"); end one with HTTP DELETE, or wait for an idle one to time out"
	}
	s.deps.Logger.Warn("new HTTP session refused", "status", status)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": -32000, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "5")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// clientKey identifies the client of a request for the per-client session
// cap: the address in the trusted header when one is configured and holds
// one, else the remote IP address; an IPv6 address by its /64.
func clientKey(r *http.Request, header string) string {
	if header != "" {
		if v := r.Header.Values(header); len(v) > 0 {
			last := v[len(v)-1]
			if i := strings.LastIndexByte(last, ','); i >= 0 {
				last = last[i+1:]
			}
			if k, ok := ipKey(strings.TrimSpace(last)); ok {
				return k
			}
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if k, ok := ipKey(host); ok {
		return k
	}
	return host
}

// ipKey is the key of one address: an IPv4 address itself, an IPv6
// address its /64 prefix.
func ipKey(s string) (string, bool) {
	addr, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil {
		return "", false
	}
	addr = addr.Unmap()
	if addr.Is4() {
		return addr.String(), true
	}
	p, err := addr.WithZone("").Prefix(64)
	if err != nil {
		return "", false
	}
	return p.String(), true
}

// baseMediaTypeOf is a Content-Type without its parameters, lower case.
func baseMediaTypeOf(v string) string {
	v, _, _ = strings.Cut(v, ";")
	return strings.ToLower(strings.TrimSpace(v))
}

// endHTTPSession closes our record of the session an authenticated DELETE
// names, before the SDK closes the session (which waits for calls in
// flight): the owned sandboxes are destroyed at once and the calls in
// flight are cancelled.
func (s *Server) endHTTPSession(id, principal string) {
	if id == "" {
		return
	}
	// HANDLE-4: another principal's DELETE ends nothing (the SDK answers it 403).
	if sess, ok := s.reg.http.session(id); ok && sess.principal() == principal {
		s.reg.end(sess)
	}
}

// tokenKey is one accepted bearer token, by its SHA-256, and the principal
// it authenticates.
type tokenKey struct {
	sum       [sha256.Size]byte
	principal string
}

// tokenKeys lists the accepted tokens of o.
func tokenKeys(o HTTPOptions) []tokenKey {
	var keys []tokenKey
	if o.Token != "" {
		keys = append(keys, tokenKey{sha256.Sum256([]byte(o.Token)), TokenPrincipal})
	}
	for tok, p := range o.Tokens {
		keys = append(keys, tokenKey{sha256.Sum256([]byte(tok)), p})
	}
	return keys
}

// bearerPrincipal checks "Authorization: Bearer <token>" against every
// accepted token in constant time and returns the token's principal.
func bearerPrincipal(r *http.Request, keys []tokenKey) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	principal, found := "", false
	for _, k := range keys {
		if subtle.ConstantTimeCompare(got[:], k.sum[:]) == 1 {
			principal, found = k.principal, true
		}
	}
	return principal, found
}

// arrivedOnLoopback reports whether the request came in on a loopback
// address of this host.
func arrivedOnLoopback(r *http.Request) bool {
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || addr == nil {
		return false
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsLoopbackAddr reports whether a listen address ("host:port") names only
// loopback interfaces: 127.0.0.0/8, ::1 or "localhost".
func IsLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// writeChunk is the largest piece of a response written under one write
// deadline: a client must take this much every WriteTimeout.
const writeChunk = 64 << 10

// slowClientBounds applies ReadTimeout to reading the request's body and
// WriteTimeout to each write of the response, through the connection's
// deadlines. The returned done must be called when the handler returns.
func (s *Server) slowClientBounds(w http.ResponseWriter, r *http.Request, o HTTPOptions) (http.ResponseWriter, *http.Request, func()) {
	rc := http.NewResponseController(w)
	if o.ReadTimeout > 0 && r.Body != nil && r.Body != http.NoBody {
		if rc.SetReadDeadline(time.Now().Add(o.ReadTimeout)) == nil {
			r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
		}
	}
	if o.WriteTimeout > 0 {
		// A deadline left by an earlier request on this connection must
		// not cut this one's first write.
		_ = rc.SetWriteDeadline(time.Time{})
		w = &deadlineWriter{ResponseWriter: w, rc: rc, d: o.WriteTimeout}
	}
	return w, r, func() {
		// A body left unread keeps its deadline: the HTTP server may
		// still read (and discard) it, and a stalled client must not
		// hold that read.
		if o.WriteTimeout > 0 {
			// Room for what the HTTP server writes after the handler.
			_ = rc.SetWriteDeadline(time.Now().Add(o.WriteTimeout))
		}
	}
}

// deadlineBody clears the read deadline once the body has been read to its
// end, so that it cannot fire while a long call is being answered (the
// HTTP server then watches the idle connection for the client going away).
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	once sync.Once
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.once.Do(func() { _ = b.rc.SetReadDeadline(time.Time{}) })
	}
	return n, err
}

// deadlineWriter sets a write deadline before each piece of the response,
// so that a client that stops reading is cut off after WriteTimeout, while
// a stream that is merely quiet is not.
type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		n := min(len(p), writeChunk)
		_ = w.rc.SetWriteDeadline(time.Now().Add(w.d))
		m, err := w.ResponseWriter.Write(p[:n])
		written += m
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// FlushError flushes under a fresh write deadline.
func (w *deadlineWriter) FlushError() error {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.d))
	return w.rc.Flush()
}

// Flush is FlushError for callers that use http.Flusher.
func (w *deadlineWriter) Flush() { _ = w.FlushError() }

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
