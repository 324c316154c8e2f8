package conformance

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// fakeHub gives every spec a fresh fake provider behind one loopback address
// and one in-process transport, so a server configured once (another
// process's environment) reaches whichever fake the current spec owns.
type fakeHub struct {
	apiKey string
	routes fakeprovider.RouteFamily // create/connect families each fake serves
	// newDaemon builds each sandbox's daemon; nil for the in-memory one.
	newDaemon func(fakeprovider.DaemonConfig) fakeprovider.Daemon

	mu    sync.Mutex
	cur   *fakeprovider.Provider
	clock *fakeprovider.FakeClock
	// retired are the providers of earlier specs. A create still in
	// flight when its spec ended adds a sandbox after the provider was
	// closed; each fresh and close closes them again, so such a sandbox
	// (a real one with FakeDaemon: processes and a directory) does not
	// outlive the next spec.
	retired []*fakeprovider.Provider

	srv *fakeprovider.Server // nil until listen
}

func newFakeHub(apiKey string) *fakeHub {
	if apiKey == "" {
		b := make([]byte, 20)
		_, _ = rand.Read(b)
		apiKey = "e2b_" + hex.EncodeToString(b)
	}
	return &fakeHub{apiKey: apiKey}
}

// fresh replaces the current provider with a new, empty one and returns it.
func (h *fakeHub) fresh() (*fakeprovider.Provider, *fakeprovider.FakeClock) {
	clock := fakeprovider.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	// The kit's leak specs need the detectors a faithful client would see
	// (metadata and env entries, canary domain, error-message suffix).
	p := fakeprovider.New(&fakeprovider.Options{APIKey: h.apiKey, Clock: clock, Canaries: true, Routes: h.routes, NewDaemon: h.newDaemon})
	h.mu.Lock()
	if h.cur != nil {
		h.retired = append(h.retired, h.cur)
	}
	h.cur, h.clock = p, clock
	retired := slices.Clone(h.retired)
	h.mu.Unlock()
	closeProviders(retired)
	return p, clock
}

// closeProviders closes each provider.
func closeProviders(ps []*fakeprovider.Provider) {
	for _, p := range ps {
		p.Close()
	}
}

func (h *fakeHub) current() *fakeprovider.Provider {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur
}

// ServeHTTP hands a loopback request to the current provider.
func (h *fakeHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := h.current()
	if p == nil {
		http.Error(w, `{"code":503,"message":"no spec is running"}`, http.StatusServiceUnavailable)
		return
	}
	p.ServeHTTP(w, r)
}

// RoundTrip hands an in-process request to the current provider.
func (h *fakeHub) RoundTrip(req *http.Request) (*http.Response, error) {
	p := h.current()
	if p == nil {
		return nil, http.ErrServerClosed
	}
	return p.RoundTripper().RoundTrip(req)
}

// listen serves the hub on a loopback address.
func (h *fakeHub) listen(addr string) error {
	srv, err := fakeprovider.ListenHandler(addr, h)
	if err != nil {
		return err
	}
	h.srv = srv
	return nil
}

// env is the environment that points an E2B SDK at the hub on loopback.
func (h *fakeHub) env() []string {
	return []string{
		sandbox.EnvAPIURL + "=" + h.srv.URL(),
		sandbox.EnvAPIKey + "=" + h.apiKey,
		sandbox.EnvDomain + "=" + fakeprovider.DomainSuffix,
		sandbox.EnvSandboxURL + "=" + h.srv.URL(),
	}
}

// openConnections reports the loopback connections open now (0 in-process).
func (h *fakeHub) openConnections() int {
	if h.srv == nil {
		return 0
	}
	return h.srv.OpenConnections()
}

func (h *fakeHub) close() {
	if h.srv != nil {
		_ = h.srv.Close()
	}
	h.mu.Lock()
	ps := h.retired
	if h.cur != nil {
		ps = append(ps, h.cur)
	}
	h.cur, h.retired = nil, nil
	h.mu.Unlock()
	closeProviders(ps)
}
