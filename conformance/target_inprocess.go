package conformance

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
	"github.com/sandboxkit/sandboxkit/server"
)

// inProcessTarget is the reference server in the kit's own process, reached
// through in-memory transports, with its platform reaching the fake hub on
// loopback (as a server in another process does), or, in cloud mode, the
// real platform.
type inProcessTarget struct {
	hub      *fakeHub      // fake modes
	cloud    *cloudBackend // cloud mode
	breakage *breakage
	// deadline, when not zero, is the provider deadline the server gets
	// (request and file timeouts): fake modes only.
	deadline time.Duration
	log      lockedBuffer
	srv      *server.Server
	ctx      context.Context
	stopctx  context.CancelFunc

	httpOnce sync.Once
	httpSrv  *httptest.Server
}

func (t *inProcessTarget) start(ctx context.Context) error {
	var (
		platform *sandbox.Platform
		secrets  []string
		benv     breakEnv
		err      error
	)
	if t.cloud != nil {
		var wrap func(http.RoundTripper) http.RoundTripper
		if b := t.breakage; b != nil && b.transport != nil {
			wrap = b.transport
		}
		if platform, err = t.cloud.newPlatform(wrap, referenceUserAgent); err != nil {
			return err
		}
		secrets = t.cloud.serverSecrets(platform)
		pc, _ := platform.Provider(sandbox.DefaultProviderID)
		benv = breakEnv{rt: http.DefaultTransport, apiURL: pc.APIURL, apiKey: t.cloud.getenv(sandbox.EnvAPIKey)}
	} else {
		// The fake on loopback, through a transport of the server's own, as
		// for a server in another process.
		env := map[string]string{
			sandbox.EnvAPIKey:     t.hub.apiKey,
			sandbox.EnvAPIURL:     t.hub.srv.URL(),
			sandbox.EnvSandboxURL: t.hub.srv.URL(),
		}
		var rt http.RoundTripper = http.DefaultTransport.(*http.Transport).Clone()
		if b := t.breakage; b != nil && b.transport != nil {
			rt = b.transport(rt)
		}
		var pcfg *sandbox.Config
		if t.hub.routes == fakeprovider.V2Routes {
			// The kit's own tests: a fake without the v1 routes, and the
			// reference server configured for v2.
			pcfg = &sandbox.Config{Providers: []sandbox.ProviderConfig{{ID: sandbox.DefaultProviderID,
				APIURL: env[sandbox.EnvAPIURL], SandboxURL: env[sandbox.EnvSandboxURL], Domain: fakeprovider.DomainSuffix,
				APIKeyEnv: sandbox.EnvAPIKey, Routes: sandbox.RoutesV2}}}
		}
		platform, err = sandbox.NewPlatform(&sandbox.Options{
			Config:         pcfg,
			Getenv:         func(k string) string { return env[k] },
			HTTPClient:     &http.Client{Transport: rt},
			UserAgent:      "sandboxkit-conformance/" + Version,
			RequestTimeout: t.deadline,
		})
		if err != nil {
			return fmt.Errorf("conformance: reference server platform: %w", err)
		}
		secrets = []string{t.hub.apiKey}
		benv = breakEnv{rt: rt, apiURL: env[sandbox.EnvAPIURL], apiKey: t.hub.apiKey}
	}
	logger := slog.New(slog.NewJSONHandler(&t.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.srv, err = server.New(&server.Deps{Platform: platform, Logger: logger, Secrets: secrets, Limits: t.limits()},
		&server.Options{Name: "sandboxkit-reference", Version: Version})
	if err != nil {
		return fmt.Errorf("conformance: reference server: %w", err)
	}
	if b := t.breakage; b != nil && b.middleware != nil {
		t.srv.MCPServer().AddReceivingMiddleware(b.middleware(benv))
	}
	t.ctx, t.stopctx = context.WithCancel(context.WithoutCancel(ctx))
	return nil
}

// limits are the server's limits: its defaults, but for the file timeout
// when the kit sets a provider deadline.
func (t *inProcessTarget) limits() server.Limits {
	return server.Limits{FileTimeout: t.deadline}
}

func (t *inProcessTarget) connect(ctx context.Context, version string) (*clientConn, error) {
	// Newline-delimited JSON over an in-memory pipe, as over stdio, with room
	// for the largest upload the contract allows (16 MiB decoded is ~22 MB
	// of JSON; the SDK's in-memory transport stops at 16 MiB).
	clientEnd, serverEnd := net.Pipe()
	clientT := &mcp.IOTransport{Reader: clientEnd, Writer: clientEnd, MaxLineLength: inProcessMaxMessage}
	serverT := &mcp.IOTransport{Reader: serverEnd, Writer: serverEnd, MaxLineLength: inProcessMaxMessage}
	done := make(chan error, 1)
	go func() { done <- t.srv.Run(t.ctx, serverT) }()
	cs, err := newClient().Connect(ctx, clientT, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		_ = clientEnd.Close() // the server side ends when its peer is gone
		return nil, fmt.Errorf("conformance: connect in-process: %w", err)
	}
	ended := func(ctx context.Context) error {
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return &clientConn{cs: cs, ended: ended}, nil
}

func (t *inProcessTarget) logs() string { return t.log.String() }

func (t *inProcessTarget) stop() {
	if t.httpSrv != nil {
		t.httpSrv.Close()
	}
	if t.srv != nil {
		_ = t.srv.Shutdown(context.Background())
	}
	if t.stopctx != nil {
		t.stopctx()
	}
}

// connectAlternate reaches the same server over Streamable HTTP on a
// loopback listener.
func (t *inProcessTarget) connectAlternate(ctx context.Context, version string) (*clientConn, error) {
	t.httpOnce.Do(func() {
		t.httpSrv = httptest.NewServer(t.srv.HTTPHandler(nil))
	})
	transport := &mcp.StreamableClientTransport{Endpoint: t.httpSrv.URL + server.MCPPath, MaxRetries: -1, DisableStandaloneSSE: true}
	cs, err := newClient().Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, fmt.Errorf("conformance: connect over HTTP: %w", err)
	}
	return &clientConn{cs: cs}, nil
}

// inProcessMaxMessage bounds one JSON-RPC message on the in-process pipe.
const inProcessMaxMessage = 64 << 20
