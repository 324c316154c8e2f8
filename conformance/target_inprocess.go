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
	"github.com/sandboxkit/sandboxkit/internal/syncbuf"
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
	log      syncbuf.Buffer
	srv      *server.Server
	ctx      context.Context
	stopctx  context.CancelFunc

	deps *server.Deps // what every server of the target is built on
	benv breakEnv
	// platformWith, in fake modes, builds another platform like the
	// server's with another provider deadline (deadlineTarget).
	platformWith func(deadline time.Duration) (*sandbox.Platform, error)

	// extraMu guards extra: the servers of deadline targets, shut down
	// with the target.
	extraMu sync.Mutex
	extra   []*server.Server

	httpOnce sync.Once
	httpSrv  *httptest.Server
	// principalSrv serves two principals' tokens (HANDLE-1).
	principalSrv  *httptest.Server
	principalOnce sync.Once
	// modernSrv is the protocol specs' HTTP endpoint (TOOLS-4).
	modernSrv  *httptest.Server
	modernOnce sync.Once
	idleOnce   sync.Once
	idleSrv    *httptest.Server
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
		t.platformWith = func(deadline time.Duration) (*sandbox.Platform, error) {
			return sandbox.NewPlatform(&sandbox.Options{
				Config:         pcfg,
				Getenv:         func(k string) string { return env[k] },
				HTTPClient:     &http.Client{Transport: rt},
				UserAgent:      "sandboxkit-conformance/" + Version,
				RequestTimeout: deadline,
				// The bound errors.oversized's fault exceeds (oversizeBytes).
				MaxResponseBytes: InProcessResponseBytes,
			})
		}
		platform, err = t.platformWith(t.deadline)
		if err != nil {
			return fmt.Errorf("conformance: reference server platform: %w", err)
		}
		secrets = []string{t.hub.apiKey}
		benv = breakEnv{rt: rt, apiURL: env[sandbox.EnvAPIURL], apiKey: t.hub.apiKey}
	}
	logger := slog.New(slog.NewJSONHandler(&t.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.deps = &server.Deps{Platform: platform, Logger: logger, Secrets: secrets, Limits: t.limits()}
	t.benv = benv
	if t.srv, err = t.newServer(); err != nil {
		return err
	}
	t.ctx, t.stopctx = context.WithCancel(context.WithoutCancel(ctx))
	return nil
}

// newServer builds a reference server on the target's platform, broken as
// the variant says.
func (t *inProcessTarget) newServer() (*server.Server, error) {
	srv, err := server.New(t.deps, &server.Options{Name: "sandboxkit-reference", Version: Version})
	if err != nil {
		return nil, fmt.Errorf("conformance: reference server: %w", err)
	}
	if b := t.breakage; b != nil && b.middleware != nil {
		srv.MCPServer().AddReceivingMiddleware(b.middleware(t.benv))
	}
	return srv, nil
}

// limits are the server's limits: its defaults, but for the file timeout
// when the kit sets a provider deadline, a lost create's check window
// of one listing (the specs share one server, and a check that kept
// listing would make requests in later specs' journals: cleanup.lost-create
// holds that listing until the late sandbox exists), and, on the fake, the
// transfer cap the kit holds it to (Config.transferCap).
func (t *inProcessTarget) limits() server.Limits {
	l := server.Limits{FileTimeout: t.deadline, CreateCheckFor: time.Millisecond}
	if t.cloud == nil {
		l.TransferBytes = InProcessTransferBytes
	}
	return l
}

func (t *inProcessTarget) connect(ctx context.Context, version string) (*clientConn, error) {
	return t.connectTo(ctx, t.srv, version)
}

// connectTo opens a session with srv over an in-memory pipe.
func (t *inProcessTarget) connectTo(ctx context.Context, srv *server.Server, version string) (*clientConn, error) {
	// Newline-delimited JSON over an in-memory pipe, as over stdio, with room
	// for the largest upload the contract allows (16 MiB decoded is ~22 MB
	// of JSON; the SDK's in-memory transport stops at 16 MiB).
	clientEnd, serverEnd := net.Pipe()
	clientT := &mcp.IOTransport{Reader: clientEnd, Writer: clientEnd, MaxLineLength: inProcessMaxMessage}
	serverT := &mcp.IOTransport{Reader: serverEnd, Writer: serverEnd, MaxLineLength: inProcessMaxMessage}
	done := make(chan error, 1)
	go func() { done <- srv.Run(t.ctx, serverT) }()
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
	for _, s := range []*httptest.Server{t.httpSrv, t.idleSrv, t.principalSrv, t.modernSrv} {
		if s != nil {
			s.Close()
		}
	}
	if t.srv != nil {
		_ = t.srv.Shutdown(context.Background())
	}
	t.extraMu.Lock()
	for _, srv := range t.extra {
		_ = srv.Shutdown(context.Background())
	}
	t.extraMu.Unlock()
	if t.stopctx != nil {
		t.stopctx()
	}
}

// connectAlternate reaches the same server over Streamable HTTP on a
// loopback listener.
func (t *inProcessTarget) connectAlternate(ctx context.Context, version string) (*clientConn, error) {
	t.httpOnce.Do(func() {
		t.httpSrv = httptest.NewServer(t.srv.HTTPHandler(t.httpOptions(nil)))
	})
	return connectHTTP(ctx, t.httpSrv.URL+server.MCPPath, version)
}

// httpOptions returns o as the variant edits it.
func (t *inProcessTarget) httpOptions(o *server.HTTPOptions) *server.HTTPOptions {
	if o == nil {
		o = &server.HTTPOptions{}
	}
	if b := t.breakage; b != nil && b.http != nil {
		b.http(o)
	}
	return o
}

// connectIdle opens a Streamable HTTP session on a listener of the same
// server whose sessions close after idle without a request.
func (t *inProcessTarget) connectIdle(ctx context.Context, version string, idle time.Duration) (*clientConn, error) {
	t.idleOnce.Do(func() {
		t.idleSrv = httptest.NewServer(t.srv.HTTPHandler(t.httpOptions(&server.HTTPOptions{SessionTimeout: idle})))
	})
	return connectHTTP(ctx, t.idleSrv.URL+server.MCPPath, version)
}

// connectShutdown opens a session on a reference server of its own and
// returns the function that shuts that server down (Server.Shutdown, as on
// SIGTERM).
func (t *inProcessTarget) connectShutdown(ctx context.Context, version string) (*clientConn, func(context.Context) error, error) {
	srv, err := t.newServer()
	if err != nil {
		return nil, nil, err
	}
	conn, err := t.connectTo(ctx, srv, version)
	if err != nil {
		return nil, nil, err
	}
	shutdown := func(ctx context.Context) error {
		if b := t.breakage; b != nil && b.onShutdown != nil {
			b.onShutdown()
		}
		return srv.Shutdown(ctx)
	}
	return conn, shutdown, nil
}

// connectHTTP opens a Streamable HTTP session with the endpoint.
func connectHTTP(ctx context.Context, endpoint, version string) (*clientConn, error) {
	transport := &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1, DisableStandaloneSSE: true}
	cs, err := newClient().Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, fmt.Errorf("conformance: connect over HTTP: %w", err)
	}
	return &clientConn{cs: cs}, nil
}

// inProcessMaxMessage bounds one JSON-RPC message on the in-process pipe.
const inProcessMaxMessage = 64 << 20

// httpShutdownServer serves a reference server of its own over Streamable
// HTTP on a loopback listener (the variant's handler wrapper around it),
// and returns its endpoint and the function that shuts it down as "serve
// --http" does on SIGTERM: Server.Shutdown, then the listener's.
func (t *inProcessTarget) httpShutdownServer() (string, func(context.Context) error, error) {
	srv, err := t.newServer()
	if err != nil {
		return "", nil, err
	}
	h := srv.HTTPHandler(t.httpOptions(nil))
	if b := t.breakage; b != nil && b.handler != nil {
		h = b.handler(h)
	}
	hs := httptest.NewServer(h)
	shutdown := func(ctx context.Context) error {
		if b := t.breakage; b != nil && b.onShutdown != nil {
			b.onShutdown()
		}
		err := srv.Shutdown(ctx)
		hs.Close()
		return err
	}
	return hs.URL + server.MCPPath, shutdown, nil
}

// withDeadline returns a target that is a reference server of its own on a
// platform like the target's, but with provider deadline d (its request
// and file timeouts), broken as the variant says; it is shut down with the
// target. It needs the fake (platformWith).
func (t *inProcessTarget) withDeadline(d time.Duration) (target, error) {
	if t.platformWith == nil {
		return nil, fmt.Errorf("conformance: a provider deadline of its own needs the fake")
	}
	platform, err := t.platformWith(d)
	if err != nil {
		return nil, fmt.Errorf("conformance: reference server platform: %w", err)
	}
	deps := *t.deps
	deps.Platform = platform
	// The target's limits (a lost create's one-listing window too: a
	// check that kept listing would reach later specs' journals), with
	// this deadline.
	deps.Limits = t.limits()
	deps.Limits.FileTimeout = d
	srv, err := server.New(&deps, &server.Options{Name: "sandboxkit-reference", Version: Version})
	if err != nil {
		return nil, fmt.Errorf("conformance: reference server: %w", err)
	}
	if b := t.breakage; b != nil && b.middleware != nil {
		srv.MCPServer().AddReceivingMiddleware(b.middleware(t.benv))
	}
	t.extraMu.Lock()
	t.extra = append(t.extra, srv)
	t.extraMu.Unlock()
	return &deadlineTarget{parent: t, srv: srv}, nil
}

// deadlineTarget is a reference server of an in-process target with a
// provider deadline of its own (withDeadline), reached like the target's.
type deadlineTarget struct {
	parent *inProcessTarget
	srv    *server.Server
}

func (t *deadlineTarget) start(context.Context) error { return nil }

func (t *deadlineTarget) connect(ctx context.Context, version string) (*clientConn, error) {
	return t.parent.connectTo(ctx, t.srv, version)
}

func (t *deadlineTarget) logs() string { return t.parent.logs() }

// stop leaves the server to its parent, which shuts it down at its stop.
func (t *deadlineTarget) stop() {}
