package fakeprovider

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// A Server serves a Provider over HTTP/1.1 on a loopback address.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{} // closed when Serve returns

	mu    sync.Mutex
	conns map[net.Conn]struct{} // connections in state new, active or idle

	closeOnce sync.Once
	closeErr  error
}

// Listen serves the Provider on addr, which must be a loopback address
// ("127.0.0.1:0", "[::1]:8080", "localhost:0"). The Server shares the
// Provider's state with every other way of reaching it.
func (p *Provider) Listen(addr string) (*Server, error) {
	return ListenHandler(addr, p)
}

// ListenHandler serves h with the same loopback checks and connection
// counting as [Provider.Listen]. It is for handlers that front Providers,
// such as the conformance kit's switch that gives every spec a fresh
// Provider behind one address.
func ListenHandler(addr string, h http.Handler) (*Server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("fakeprovider: listen address %q: %w", addr, err)
	}
	if !isLoopbackHost(host) {
		return nil, fmt.Errorf("fakeprovider: refusing to listen on %q: the fake serves loopback addresses only (127.0.0.1, ::1, localhost)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fakeprovider: listen on %q: %w", addr, err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		_ = ln.Close()
		return nil, fmt.Errorf("fakeprovider: refusing to serve on %v: not a loopback address", ln.Addr())
	}
	s := &Server{ln: ln, done: make(chan struct{}), conns: make(map[net.Conn]struct{})}
	s.srv = &http.Server{
		Handler:           h,
		ConnState:         s.trackConn,
		ReadHeaderTimeout: 30 * time.Second,
	}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// Start serves the Provider on 127.0.0.1 at a free port and closes the
// Server when t's test ends. It fails t when it cannot listen.
func (p *Provider) Start(t testing.TB) *Server {
	t.Helper()
	s, err := p.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatalf("fakeprovider: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// isLoopbackHost reports whether host names a loopback interface.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// URL returns the Server's base URL, "http://127.0.0.1:<port>". It is both
// the API URL (E2B_API_URL) and the sandbox URL (E2B_SANDBOX_URL, envd
// requests carrying E2b-Sandbox-Id).
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Addr returns the address the Server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// trackConn keeps the set of open connections.
func (s *Server) trackConn(c net.Conn, state http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch state {
	case http.StateNew, http.StateActive, http.StateIdle:
		s.conns[c] = struct{}{}
	case http.StateHijacked, http.StateClosed:
		delete(s.conns, c)
	}
}

// OpenConnections returns how many client connections are open now (new,
// active or idle); hijacked and closed ones do not count.
func (s *Server) OpenConnections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Close stops the Server: it closes the listener and every connection
// (cancelling the requests in flight) and waits for the accept loop to end.
// The Provider and its sandboxes are untouched. Close is idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		err := s.srv.Close()
		<-s.done
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.closeErr = fmt.Errorf("fakeprovider: close server: %w", err)
		}
	})
	return s.closeErr
}
