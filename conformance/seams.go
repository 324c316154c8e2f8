package conformance

import (
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/server"
)

// testSeams are the kit's own tests' hooks into a run. They are no part of
// the Config a user writes: they reach a run only through runKit, which
// [RunWith] calls with none and the kit's tests call with theirs.
type testSeams struct {
	// breakage turns the in-process reference server into a deliberately
	// broken variant.
	breakage *breakage
	// cloudSettle replaces the settle time of cloud mode (against a fake
	// posing as a real provider).
	cloudSettle time.Duration
	// fakeRoutes makes the fake serve one create/connect route family; the
	// in-process reference server is then configured for it.
	fakeRoutes fakeprovider.RouteFamily
}

// settle is how long the run waits for a closed session's sandboxes to go:
// the configuration's, unless a test seam replaces cloud mode's.
func (s testSeams) settle(cfg *Config) time.Duration {
	if cfg.Cloud && s.cloudSettle > 0 {
		return s.cloudSettle
	}
	return cfg.settle()
}

// breakage is a deliberately broken variant of the reference server: a
// wrapper around its transport to the provider and a middleware around its
// MCP methods. The kit's power tests prove every family catches one.
type breakage struct {
	transport  func(http.RoundTripper) http.RoundTripper
	middleware func(env breakEnv) mcp.Middleware
	// http edits the options of the in-process server's HTTP listeners.
	http func(*server.HTTPOptions)
	// handler, when set, wraps the in-process server's HTTP handler of
	// the protocol specs' endpoint, of the HTTP shutdown spec's server and
	// of the session cap specs' servers (capsServer).
	handler func(http.Handler) http.Handler
	// deps, when set, edits the dependencies of the in-process servers
	// that specs start with a policy the kit declares (declaredServer).
	deps func(*server.Deps)
	// onShutdown runs when the kit shuts an in-process server down
	// (cleanup.shutdown, cleanup.shutdown-answers-http-calls), before the
	// server's own Shutdown.
	onShutdown func()
}

// breakEnv is what a broken variant's middleware may use to reach the
// provider on its own.
type breakEnv struct {
	rt     http.RoundTripper
	apiURL string
	apiKey string
}
