package conformance

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/internal/syncbuf"
)

// httpTarget is a Streamable HTTP endpoint, started by the kit from
// ServerCommand when one is given, or already running.
type httpTarget struct {
	cfg *Config
	// env is added to the command's environment before ServerEnv: the
	// fake's location, or nothing in cloud mode (the real environment
	// passes through).
	env []string
	// settle is the run's settle time: how long a server gets to destroy
	// its sandboxes against a real provider.
	settle time.Duration
	log    syncbuf.Buffer
	cmd    *exec.Cmd
}

func (t *httpTarget) start(ctx context.Context) error {
	if len(t.cfg.ServerCommand) > 0 {
		cmd := exec.Command(t.cfg.ServerCommand[0], t.cfg.ServerCommand[1:]...)
		cmd.Env = append(append(serverBaseEnv(), t.env...), t.cfg.ServerEnv...)
		cmd.Stdout, cmd.Stderr = &t.log, &t.log
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("conformance: start HTTP server command: %w", err)
		}
		t.cmd = cmd
	}
	return t.waitReachable(ctx, 15*time.Second)
}

// waitReachable waits until the endpoint's host accepts TCP connections.
func (t *httpTarget) waitReachable(ctx context.Context, limit time.Duration) error {
	u, err := url.Parse(t.cfg.ServerURL)
	if err != nil {
		return fmt.Errorf("conformance: server URL: %w", err)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	deadline := time.Now().Add(limit)
	for {
		var d net.Dialer
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		conn, err := d.DialContext(dctx, "tcp", host)
		cancel()
		if err == nil {
			_ = conn.Close()
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("conformance: server at %s not reachable after %s: %w", host, limit, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (t *httpTarget) connect(ctx context.Context, version string) (*clientConn, error) {
	transport := &mcp.StreamableClientTransport{
		Endpoint:             t.cfg.ServerURL,
		HTTPClient:           &http.Client{Transport: headerTransport{headers: t.cfg.Headers, base: http.DefaultTransport}},
		MaxRetries:           -1,
		DisableStandaloneSSE: true,
	}
	cs, err := newClient().Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, fmt.Errorf("conformance: connect over HTTP: %w", err)
	}
	return &clientConn{cs: cs}, nil
}

// connectIdle opens a session as connect does: the server's own idle
// timeout, which the configuration states, applies to it.
func (t *httpTarget) connectIdle(ctx context.Context, version string, _ time.Duration) (*clientConn, error) {
	return t.connect(ctx, version)
}

func (t *httpTarget) logs() string { return t.log.String() }

func (t *httpTarget) stop() {
	if t.cmd == nil || t.cmd.Process == nil {
		return
	}
	_ = t.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = t.cmd.Wait(); close(done) }()
	// The server destroys its sessions' sandboxes before it exits: give it
	// longer against a real provider.
	wait := 10 * time.Second
	if t.cfg.Cloud {
		wait = max(wait, t.settle)
	}
	select {
	case <-done:
	case <-time.After(wait):
		_ = t.cmd.Process.Kill()
		<-done
	}
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (h headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range h.headers {
			req.Header.Set(k, v)
		}
	}
	return h.base.RoundTrip(req)
}
