package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sandboxkit/sandboxkit/conformance/cloudstate"
	"github.com/sandboxkit/sandboxkit/sandbox"
	"github.com/sandboxkit/sandboxkit/server"
)

// cloudBackend is cloud mode's view of the real platform: the kit's own SDK
// (to cross-check the server and to destroy what the run created), the
// secrets the run has seen, and the tracker of created sandboxes.
type cloudBackend struct {
	cfg      *Config
	getenv   func(string) string
	platform *sandbox.Platform // the kit's own SDK
	provider sandbox.ProviderConfig
	apiHost  string
	secrets  *secretSet
	tracker  *cloudstate.Tracker

	mu      sync.Mutex
	foreign map[string]bool    // IDs seen before the run created them: never tracked
	wire    map[string]wireIDs // template ID and alias per sandbox, as the platform sent them
	region  string             // first region the SDK reported
}

// wireIDs are a sandbox's template ID and alias as the platform sent them.
type wireIDs struct{ templateID, alias string }

// newCloudBackend builds the kit's SDK from the environment and opens the
// run's state file. It fails without credentials.
func newCloudBackend(cfg *Config, runID string) (*cloudBackend, error) {
	c := &cloudBackend{cfg: cfg, getenv: cfg.cloudGetenv, secrets: newSecretSet(), foreign: map[string]bool{},
		wire: map[string]wireIDs{}}
	p, err := c.newPlatform(nil, kitUserAgent)
	if err != nil {
		return nil, err
	}
	if !p.HasCredentials(sandbox.DefaultProviderID) {
		return nil, errNoCredentials
	}
	c.platform = p
	c.provider, _ = p.Provider(sandbox.DefaultProviderID)
	c.apiHost = cloudstate.APIHost(c.provider.APIURL)
	c.secrets.add("API key", c.getenv(sandbox.EnvAPIKey))
	for _, v := range cfg.Headers {
		c.secrets.add("HTTP header", v)
		c.secrets.add("HTTP header", headerSecret(v))
	}
	for _, kv := range cfg.ServerEnv {
		if k, v, ok := strings.Cut(kv, "="); ok && secretName(k) {
			c.secrets.add("server environment", v)
		}
	}
	host, _ := os.Hostname()
	c.tracker, err = cloudstate.NewTracker(cfg.stateDir(), cloudstate.RunRecord{
		Format: cloudstate.RecordFormat, RunID: runID, KitVersion: Version, ProviderID: sandbox.DefaultProviderID,
		APIHost: c.apiHost, Host: host, PID: os.Getpid(), StartedAt: time.Now().UTC(),
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

var errNoCredentials = fmt.Errorf("cloud mode needs provider credentials in the environment: %s is not set (cloud mode never falls back to the fake provider)", sandbox.EnvAPIKey)

// The User-Agent of the kit's own SDK, and of the in-process reference
// server's, so that a provider's logs (and the kit's tests) tell them apart.
var (
	kitUserAgent       = "sandboxkit-conformance/" + Version
	referenceUserAgent = "sandboxkit-reference/" + Version
)

// newPlatform builds a platform on the real environment whose every
// control-plane response passes the secret capture; wrap, when not nil,
// wraps the transport underneath (the kit's broken variants).
func (c *cloudBackend) newPlatform(wrap func(http.RoundTripper) http.RoundTripper, userAgent string) (*sandbox.Platform, error) {
	var rt http.RoundTripper = http.DefaultTransport.(*http.Transport).Clone()
	if wrap != nil {
		rt = wrap(rt)
	}
	p, err := sandbox.NewPlatform(&sandbox.Options{
		Getenv:     c.getenv,
		HTTPClient: &http.Client{Transport: &captureTransport{base: rt, c: c}},
		UserAgent:  userAgent,
	})
	if err != nil {
		return nil, fmt.Errorf("conformance: cloud platform: %w", err)
	}
	return p, nil
}

// serverSecrets are the values the in-process reference server must never
// put in a result.
func (c *cloudBackend) serverSecrets(p *sandbox.Platform) []string {
	return server.SecretsFromEnv(p, c.getenv)
}

// noteForeign records an ID the run saw before creating it (listed, or
// passed in by a spec): it is never tracked, so never destroyed.
func (c *cloudBackend) noteForeign(id string) {
	if id == "" || c.tracker.Has(id) {
		return
	}
	c.mu.Lock()
	c.foreign[id] = true
	c.mu.Unlock()
}

// track records a sandbox the run created, durably, at once. It refuses IDs
// seen earlier as someone else's.
func (c *cloudBackend) track(id, source, spec string) bool {
	if id == "" {
		return false
	}
	c.mu.Lock()
	foreign := c.foreign[id]
	c.mu.Unlock()
	if foreign {
		return false
	}
	return c.tracker.Track(id, source, spec)
}

// info reads a sandbox's metadata through the kit's SDK; ok is false when
// the platform says it does not exist.
func (c *cloudBackend) info(ctx context.Context, id string) (*sandbox.Info, bool, error) {
	cctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()
	in, err := c.platform.GetInfoByID(cctx, id, nil)
	if err != nil {
		if sandbox.CategoryOf(err) == sandbox.NotFound {
			c.markGone(id)
			return nil, false, nil
		}
		return nil, false, err
	}
	if in.Region != nil && *in.Region != "" {
		c.mu.Lock()
		if c.region == "" {
			c.region = *in.Region
		}
		c.mu.Unlock()
	}
	return in, true, nil
}

func (c *cloudBackend) markGone(id string) { c.tracker.SetState(id, cloudstate.SandboxGone) }

// errNotCreated says that a sandbox the server reported as created started
// before the run: the kit leaves it alone.
var errNotCreated = errors.New("the platform says it started before the run began, so the run did not create it: left alone")

// vetClaim reads a tracked sandbox from the platform (so the tokens the
// platform issued for it join the run's secrets) and reports whether it
// exists; a sandbox that does not is marked gone. One that the server
// under test reported as created (any source but the kit's own) and that
// started before the run is marked not-created, never to be destroyed, and
// errNotCreated is returned.
func (c *cloudBackend) vetClaim(ctx context.Context, id string) (exists bool, err error) {
	in, ok, err := c.info(ctx, id)
	switch {
	case err != nil:
		return false, err
	case !ok:
		return false, nil
	case c.tracker.Source(id) != cloudstate.SourceKit && cloudstate.StartedBeforeRun(in, c.tracker.StartedAt()):
		c.tracker.SetState(id, cloudstate.SandboxNotCreated)
		return true, errNotCreated
	}
	return true, nil
}

// destroy destroys a sandbox the run created through the kit's SDK
// (KillByID, no listing); a sandbox already gone is fine. A sandbox the
// server reported as created is first read from the platform: one that
// started before the run is not destroyed (errNotCreated).
func (c *cloudBackend) destroy(ctx context.Context, id string) error {
	if !c.tracker.Has(id) {
		return fmt.Errorf("conformance: refusing to destroy %s: the run did not create it", id)
	}
	if exists, err := c.vetClaim(ctx, id); err != nil || !exists {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()
	err := c.platform.KillByID(cctx, id, nil)
	switch {
	case err == nil:
		c.tracker.SetState(id, cloudstate.SandboxDestroyed)
		return nil
	case sandbox.CategoryOf(err) == sandbox.NotFound:
		c.markGone(id)
		return nil
	default:
		return err
	}
}

// createExternal creates a sandbox through the kit's SDK, not through the
// server: an external sandbox for the server's sessions. It is tracked
// before Create returns to the spec, and destroyed when the spec ends.
func (c *cloudBackend) createExternal(ctx context.Context, spec string, timeout time.Duration) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 2*c.cfg.CallTimeout)
	defer cancel()
	sb, err := c.platform.Create(cctx, &sandbox.CreateOptions{
		Timeout:  timeout,
		Metadata: map[string]string{"sandboxkit-run": c.tracker.RunID(), "sandboxkit-role": "external"},
	})
	if err != nil {
		return "", err
	}
	c.track(sb.ID(), cloudstate.SourceKit, spec)
	return sb.ID(), nil
}

// finishAll destroys every tracked sandbox not known to be gone, at the
// end of the run, and closes the state file. It returns the IDs it could
// not destroy.
func (c *cloudBackend) finishAll(ctx context.Context) []string {
	var failed []string
	for _, id := range c.tracker.Alive() {
		if err := c.destroy(ctx, id); err != nil && !errors.Is(err, errNotCreated) {
			failed = append(failed, id)
		}
	}
	c.tracker.End()
	return failed
}

// templateMatches reports whether a server's template value names the
// sandbox's template as the platform sent it (ID or alias).
func (c *cloudBackend) templateMatches(id, got string, in *sandbox.Info) bool {
	if got == in.Template {
		return true
	}
	c.mu.Lock()
	w := c.wire[bareID(id)]
	c.mu.Unlock()
	return got != "" && (got == w.templateID || got == w.alias)
}

// observedRegion is the region the SDK reported first, else the provider's
// configured default.
func (c *cloudBackend) observedRegion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.region != "" {
		return c.region
	}
	return c.provider.DefaultRegion
}

// captureTransport reads every JSON control-plane response that passes
// through and records the secrets in it: access tokens, sandbox domains
// and client IDs, as the platform issued them.
type captureTransport struct {
	base http.RoundTripper
	c    *cloudBackend
}

// captureMax bounds the bodies the capture reads.
const captureMax = 4 << 20

func (t *captureTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil || !controlPlanePath(req.URL.Path) {
		return resp, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "application/json" || resp.ContentLength > captureMax {
		return resp, err
	}
	data, rerr := io.ReadAll(io.LimitReader(resp.Body, captureMax+1))
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(data), errReader{rerr}))
	if rerr == nil && len(data) <= captureMax {
		t.c.capture(data)
	}
	return resp, err
}

// errReader ends a replayed body with the original read error, if any.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	return 0, io.EOF
}

// controlPlanePath reports whether a request path is one of the control
// plane's sandbox routes (/sandboxes..., /v2/sandboxes...), under any base
// path the provider's API URL has.
func controlPlanePath(p string) bool {
	return strings.Contains(p+"/", "/sandboxes/")
}

// capture records the secrets of one JSON response.
func (c *cloudBackend) capture(data []byte) {
	var v any
	if json.Unmarshal(data, &v) != nil {
		return
	}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			if id, _ := x["sandboxID"].(string); id != "" {
				tid, _ := x["templateID"].(string)
				alias, _ := x["alias"].(string)
				c.mu.Lock()
				c.wire[id] = wireIDs{templateID: tid, alias: alias}
				c.mu.Unlock()
			}
			for k, e := range x {
				s, ok := e.(string)
				if !ok {
					walk(e)
					continue
				}
				switch strings.ToLower(k) {
				case "envdaccesstoken":
					c.secrets.add("envdAccessToken", s)
				case "trafficaccesstoken":
					c.secrets.add("trafficAccessToken", s)
				case "clientid":
					c.secrets.add("clientID", s)
				case "domain":
					if !c.publicDomain(s) {
						c.secrets.add("sandbox domain", s)
					}
				}
			}
		}
	}
	walk(v)
}

// publicDomain reports whether a domain is the provider's public one (its
// configured domain, or one the API host lies under): that is no secret,
// and redacting it would mangle the API host in the evidence.
func (c *cloudBackend) publicDomain(d string) bool {
	d = strings.ToLower(strings.TrimSuffix(d, "."))
	if d == "" || d == strings.ToLower(c.provider.Domain) {
		return true
	}
	host := strings.ToLower(c.apiHost)
	if h, _, ok := strings.Cut(host, ":"); ok {
		host = h
	}
	return host == d || strings.HasSuffix(host, "."+d)
}

// secretSet is every secret value the run has seen, by kind.
type secretSet struct {
	mu     sync.Mutex
	byVal  map[string]string // value → kind
	values []string
}

func newSecretSet() *secretSet { return &secretSet{byVal: map[string]string{}} }

// minLeakLen is the shortest value the leak scan looks for.
const minLeakLen = 6

func (s *secretSet) add(kind, v string) {
	v = strings.TrimSpace(v)
	if len(v) < minLeakLen {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byVal[v]; ok {
		return
	}
	s.byVal[v] = kind
	s.values = append(s.values, v)
}

// find returns the kind of the first secret text holds, ignoring case.
func (s *secretSet) find(text string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lower := strings.ToLower(text)
	for _, v := range s.values {
		if strings.Contains(lower, strings.ToLower(v)) {
			return s.byVal[v], true
		}
	}
	return "", false
}

func (s *secretSet) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.values...)
}

// count returns how many values of each kind were seen.
func (s *secretSet) count() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, k := range s.byVal {
		out[k]++
	}
	return out
}

// bareID drops a "provider:" prefix.
func bareID(id string) string {
	if _, after, ok := strings.Cut(id, ":"); ok {
		return after
	}
	return id
}

// headerSecret is the secret part of a header value ("Bearer X" → X too).
func headerSecret(v string) string {
	if _, tok, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
		return strings.TrimSpace(tok)
	}
	return v
}

// secretName reports whether an environment variable name suggests a
// secret value.
func secretName(k string) bool {
	k = strings.ToUpper(k)
	for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}
