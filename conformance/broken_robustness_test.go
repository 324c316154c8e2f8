package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/sandbox"
	"github.com/sandboxkit/sandboxkit/server"
)

// The broken variants of the robustness specs: each is the reference
// server with one defect the rest of the kit let pass, and the specs
// written to catch it.
func robustnessBrokenVariants() []brokenVariant {
	return []brokenVariant{
		{"background-ignores-max-bytes", FamilyBackground, "ignores get_background_command's max_bytes", backgroundIgnoresMaxBytes},
		{"retries-forbidden", FamilyCleanup, "retries a destroy the provider refused with 403", retriesForbidden},
		{"gives-up-on-other-5xx", FamilyCleanup, "takes a destroy answered 500, 502 or 504 as final (it retries only 503, 429 and resets)", givesUpOnOther5xx},
		{sweepsEveryListed, FamilyCleanup, "lists without its instance filter at the start sweep and destroys every sandbox it lists", stdioOnly},
		{sweepsSwappedTags, FamilyCleanup, "tags its sandboxes with the instance and boot IDs swapped, so its start sweep finds none", stdioOnly},
		{"shutdown-cuts-http-calls", FamilyCleanup, "ends the response streams of HTTP calls in flight when it shuts down, without their answers", shutdownCutsHTTPCalls},
		{shutdownCutsStdioCalls, FamilyCleanup, "closes stdout at SIGTERM, before the answers of the calls in flight", stdioOnly},
	}
}

// robustnessFocusedSpecs are the specs each robustness variant must fail
// (run IDs).
var robustnessFocusedSpecs = map[string][]string{
	"background-ignores-max-bytes": {"background.max-bytes-backlog", "background.max-bytes-backlog@2026-07-28"},
	"retries-forbidden":            {"cleanup.close-destroy-forbidden"},
	"gives-up-on-other-5xx":        {"cleanup.close-destroy-retries"},
	sweepsEveryListed:              {"cleanup.crash-restart-sweeps"},
	sweepsSwappedTags:              {"cleanup.crash-restart-sweeps"},
	"shutdown-cuts-http-calls":     {"cleanup.shutdown-answers-http-calls"},
	shutdownCutsStdioCalls:         {"cleanup.shutdown-answers-stdio-calls"},
}

// backgroundIgnoresMaxBytes drops get_background_command's max_bytes: a
// read returns all the output waiting, up to the default cap (BG-2).
var backgroundIgnoresMaxBytes = dropsArgument("get_background_command", "max_bytes")

// retriesForbidden sends a destroy refused with 403 a second time
// (SESSION-5: 403 is final).
var retriesForbidden = retriesDestroyRefused(http.StatusForbidden)

// givesUpOnOther5xx takes a destroy answered 500, 502 or 504 as final: the
// server's later attempts never reach the provider (SESSION-5: every 5xx
// is transient).
var givesUpOnOther5xx = givesUpDestroyAfter(func(resp *http.Response, err error) bool {
	return err == nil && resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable
})

// The start-sweep variants (SESSION-4) are this test binary started as a
// stdio server command, which the crash spec kills and starts again: the
// in-process server has no process to kill. sweepServerEnv names the
// variant (sweepCorrect: the unbroken server, the harness's control).
const (
	sweepServerEnv    = "SANDBOXKIT_TEST_SWEEP_SERVER"
	sweepCorrect      = "correct"
	sweepsEveryListed = "sweeps-every-listed"
	sweepsSwappedTags = "sweeps-swapped-tags"
	// sweepsLiveSibling sweeps at every start, whether or not another
	// process of the instance still serves.
	sweepsLiveSibling = "sweeps-live-sibling"
	// shutdownCutsStdioCalls is a stdio variant too: the kit signals it.
	shutdownCutsStdioCalls = "shutdown-cuts-stdio-calls"
)

// stdioHarnessSpecs are the specs the unbroken stdio harness must pass.
const stdioHarnessSpecs = "cleanup.crash-restart-sweeps || cleanup.crash-live-sibling-spared || cleanup.shutdown-answers-stdio-calls"

// stdioOnly is the in-process breakage of a stdio variant: none.
func stdioOnly() *breakage { return &breakage{} }

// variantConfig is the kit's configuration for a variant's child run:
// the in-process server, or for a start-sweep variant this test binary as
// its stdio server command.
func variantConfig(name string) *Config {
	cfg := NewConfig()
	if name == sweepsEveryListed || name == sweepsSwappedTags || name == sweepsLiveSibling || name == sweepCorrect || name == shutdownCutsStdioCalls {
		cfg.ServerCommand = []string{os.Args[0]}
		cfg.ServerEnv = []string{sweepServerEnv + "=" + name}
		// The reference server sweeps before it serves: a third of the
		// default bound keeps the swapped-tags run short.
		cfg.CrashBound = DefaultCrashBound / 3
	}
	return cfg
}

// serveSweepForTests serves stdio as "sandboxkit serve" does with an
// instance: the start sweep, then the one session; variant breaks the
// server's transport to the provider.
func serveSweepForTests(variant string) int {
	var rt http.RoundTripper = http.DefaultTransport.(*http.Transport).Clone()
	switch variant {
	case sweepsEveryListed:
		rt = listsWithoutFilter(rt)
	case sweepsSwappedTags:
		rt = swapsOwnershipTags(rt)
	}
	p, err := sandbox.NewPlatform(&sandbox.Options{UserAgent: "sandboxkit-sweep-" + variant, HTTPClient: &http.Client{Transport: rt}})
	if err != nil {
		return 2
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	instance := os.Getenv(InstanceEnv)
	srv, err := server.New(&server.Deps{Platform: p, Logger: logger, Secrets: server.SecretsFromEnv(p, nil), Instance: instance},
		&server.Options{Name: "sandboxkit-sweep-" + variant, Version: Version})
	if err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if instance != "" {
		// SESSION-4: only where no live process of the instance runs,
		// unless the variant ignores liveness.
		lock, sweep, share := holdTestInstance(instance)
		if lock != nil {
			defer lock.Close()
		}
		if sweep || variant == sweepsLiveSibling {
			_, _ = srv.SweepPrevious(ctx)
		}
		share()
	}
	if variant == shutdownCutsStdioCalls {
		context.AfterFunc(ctx, func() { _ = os.Stdout.Close() })
	}
	err = srv.RunStdio(ctx)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil || err != nil {
		return 1
	}
	return 0
}

// listsWithoutFilter drops the metadata filter from every list request:
// the sweep destroys every sandbox of the team.
func listsWithoutFilter(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/sandboxes") && r.URL.Query().Has("metadata") {
			r = r.Clone(r.Context())
			q := r.URL.Query()
			q.Del("metadata")
			r.URL.RawQuery = q.Encode()
		}
		return rt.RoundTrip(r)
	})
}

// swapsOwnershipTags swaps the instance and boot values in every create
// request's metadata: the sweep's instance filter matches nothing.
func swapsOwnershipTags(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/sandboxes") || r.Body == nil {
			return rt.RoundTrip(r)
		}
		data, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		var body map[string]any
		if json.Unmarshal(data, &body) == nil {
			if md, ok := body["metadata"].(map[string]any); ok {
				md[server.InstanceTagKey], md[server.BootTagKey] = md[server.BootTagKey], md[server.InstanceTagKey]
				data, _ = json.Marshal(body)
			}
		}
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(data))
		r.ContentLength = int64(len(data))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
		return rt.RoundTrip(r)
	})
}

// TestSweepHarnessControl runs the crash and stdio shutdown specs against
// this test binary as an unbroken stdio server: they must pass, so that
// the stdio variants fail by their defect, not by the harness.
func TestSweepHarnessControl(t *testing.T) {
	if os.Getenv(variantEnv) != "" || os.Getenv(sweepServerEnv) != "" {
		t.Skip("inside a child run")
	}
	if r := runChild(t, "TestBrokenVariantChild", variantEnv+"="+sweepCorrect); r.err != nil {
		t.Errorf("the unbroken stdio server fails %s: %s", stdioHarnessSpecs, r.explain())
	}
}

// shutdownCutsHTTPCalls is a server whose Shutdown does not wait for the
// HTTP calls in flight: once shutdown begins, every request still being
// handled ends at once, its stream cut without the answer (SESSION-1). The
// cut handlers go on running; what they write goes nowhere.
func shutdownCutsHTTPCalls() *breakage {
	down := make(chan struct{})
	var once sync.Once
	return &breakage{
		onShutdown: func() { once.Do(func() { close(down) }) },
		handler: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				cw := &cutWriter{w: w}
				done := make(chan struct{})
				go func() {
					defer close(done)
					next.ServeHTTP(cw, r)
				}()
				select {
				case <-done:
				case <-down:
					cw.cut()
				}
			})
		},
	}
}

// cutWriter is a ResponseWriter that, once cut, drops every write: its
// handler has been abandoned.
type cutWriter struct {
	w    http.ResponseWriter
	mu   sync.Mutex
	gone bool
}

func (c *cutWriter) cut() {
	c.mu.Lock()
	c.gone = true
	c.mu.Unlock()
}

func (c *cutWriter) Header() http.Header {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gone {
		return http.Header{}
	}
	return c.w.Header()
}

func (c *cutWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gone {
		return 0, http.ErrHandlerTimeout
	}
	return c.w.Write(p)
}

func (c *cutWriter) WriteHeader(code int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.gone {
		c.w.WriteHeader(code)
	}
}

func (c *cutWriter) Flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.w.(http.Flusher); ok && !c.gone {
		f.Flush()
	}
}
