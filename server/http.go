package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTP paths.
const (
	// MCPPath serves Streamable HTTP.
	MCPPath = "/mcp"
	// HealthPath answers 200 "ok" without authentication.
	HealthPath = "/healthz"
)

// DefaultSessionTimeout is how long an HTTP session may stay idle before it
// is closed and its sandboxes destroyed.
const DefaultSessionTimeout = 30 * time.Minute

// HTTPOptions configures [Server.HTTPHandler]. A nil *HTTPOptions selects
// every default.
type HTTPOptions struct {
	// Token, when not empty, must be sent as "Authorization: Bearer <token>"
	// on every request to MCPPath; it is compared in constant time. When
	// empty, requests that did not arrive on a loopback address are refused.
	Token string
	// SessionTimeout closes a session that has received no request for this
	// long (its owned sandboxes are destroyed). Zero means
	// [DefaultSessionTimeout]; negative means never.
	SessionTimeout time.Duration
	// MaxRequestBodyBytes bounds a request body (413 beyond). Zero means
	// room for the largest upload_file call.
	MaxRequestBodyBytes int64
}

// HTTPHandler returns the Streamable HTTP handler (at [MCPPath]) and the
// health check (at [HealthPath]). It serves the same *mcp.Server as stdio
// (TOOLS-2). DNS-rebinding protection stays on: a request that arrives on a
// loopback address with a non-loopback Host header is refused.
func (s *Server) HTTPHandler(opts *HTTPOptions) http.Handler {
	if opts == nil {
		opts = &HTTPOptions{}
	}
	timeout := opts.SessionTimeout
	switch {
	case timeout == 0:
		timeout = DefaultSessionTimeout
	case timeout < 0:
		timeout = 0
	}
	maxBody := opts.MaxRequestBodyBytes
	if maxBody == 0 {
		maxBody = int64(maxMessageBytes(s.deps.Limits))
	}
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Logger:              s.sdkLogger,
		SessionTimeout:      timeout,
		MaxRequestBodyBytes: maxBody,
	})
	var tokenSum [sha256.Size]byte
	if opts.Token != "" {
		tokenSum = sha256.Sum256([]byte(opts.Token))
	}
	mcpHandler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if opts.Token == "" {
			if !arrivedOnLoopback(r) {
				http.Error(w, "Forbidden: this server accepts only loopback connections without a token", http.StatusForbidden)
				return
			}
		} else if !bearerOK(r, tokenSum) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sandboxkit"`)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodDelete {
			s.endHTTPSession(r.Header.Get("Mcp-Session-Id"))
		}
		streamable.ServeHTTP(w, r)
	})
	mux := http.NewServeMux()
	mux.Handle(MCPPath, http.NewCrossOriginProtection().Handler(mcpHandler))
	mux.HandleFunc("GET "+HealthPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}

// endHTTPSession closes our record of the session an authenticated DELETE
// names, before the SDK closes the session (which waits for calls in
// flight): the owned sandboxes are destroyed at once and the calls in
// flight are cancelled.
func (s *Server) endHTTPSession(id string) {
	if id == "" {
		return
	}
	for ss := range s.mcp.Sessions() {
		if ss.ID() == id {
			if sess, ok := s.reg.lookup(ss); ok {
				s.reg.end(sess)
			}
			return
		}
	}
}

// bearerOK checks "Authorization: Bearer <token>" in constant time.
func bearerOK(r *http.Request, want [sha256.Size]byte) bool {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
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
