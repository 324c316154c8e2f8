package conformance

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/conformance/cloudstate"
	"github.com/sandboxkit/sandboxkit/evidence"
	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
	"github.com/sandboxkit/sandboxkit/server"
)

// Cloud mode is tested offline: a fake provider on loopback poses as a
// real one (E2B_API_URL and E2B_API_KEY point at it) and the kit runs in
// cloud mode in a child process (Ginkgo runs one suite per process). The
// fake lives in the parent, so the parent sees what the run left behind.

const (
	cloudChildEnv      = "SANDBOXKIT_CLOUD_CHILD"
	cloudStateEnv      = "SANDBOXKIT_CLOUD_STATE_DIR"
	cloudRunIDEnv      = "SANDBOXKIT_CLOUD_RUN_ID"
	cloudEvidenceEnv   = "SANDBOXKIT_CLOUD_EVIDENCE_DIR"
	cloudFilterEnv     = "SANDBOXKIT_CLOUD_LABEL_FILTER"
	cloudForeignEnv    = "SANDBOXKIT_CLOUD_FOREIGN_ID"
	cloudHTTPAddrEnv   = "SANDBOXKIT_CLOUD_HTTP_ADDR"
	stdioServerEnv     = "SANDBOXKIT_TEST_STDIO_SERVER"
	httpServerEnv      = "SANDBOXKIT_TEST_HTTP_SERVER"
	httpTokenEnv       = "SANDBOXKIT_TEST_HTTP_TOKEN"
	providerTimeoutEnv = "SANDBOXKIT_TEST_PROVIDER_TIMEOUT"
)

// TestMain lets the test binary double as a reference server on the
// platform its environment names, over stdio or Streamable HTTP, for cloud
// runs against a server command.
func TestMain(m *testing.M) {
	if os.Getenv(msServerEnv) != "" {
		os.Exit(serveMillisecondsForTests())
	}
	if os.Getenv(stdioServerEnv) != "" {
		os.Exit(serveStdioForTests())
	}
	if v := os.Getenv(sweepServerEnv); v != "" {
		os.Exit(serveSweepForTests(v))
	}
	if addr := os.Getenv(httpServerEnv); addr != "" {
		os.Exit(serveHTTPForTests(addr))
	}
	os.Exit(m.Run())
}

// testServer builds the reference server that the test binary serves as
// a server command, on the platform its environment names.
// $SANDBOXKIT_TEST_PROVIDER_TIMEOUT bounds provider requests and file
// transfers, as serve --provider-timeout and --file-timeout do.
func testServer(name string, secrets ...string) (*server.Server, *slog.Logger, error) {
	timeout, _ := time.ParseDuration(os.Getenv(providerTimeoutEnv))
	p, err := sandbox.NewPlatform(&sandbox.Options{UserAgent: name, RequestTimeout: timeout})
	if err != nil {
		return nil, nil, err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	deps := &server.Deps{Platform: p, Logger: logger, Secrets: append(server.SecretsFromEnv(p, nil), secrets...),
		Limits: server.Limits{FileTimeout: timeout}}
	srv, err := server.New(deps, &server.Options{Name: name, Version: Version})
	return srv, logger, err
}

func serveStdioForTests() int {
	srv, _, err := testServer("sandboxkit-reference-stdio")
	if err != nil {
		return 2
	}
	if err := srv.RunStdio(context.Background()); err != nil {
		return 1
	}
	return 0
}

// serveHTTPForTests serves the reference server over Streamable HTTP on
// addr, with the bearer token of $SANDBOXKIT_TEST_HTTP_TOKEN (or, with
// $SANDBOXKIT_TEST_HTTP_MAX_SESSIONS, anonymous at that session cap),
// until SIGTERM or SIGINT; then it destroys its sessions' sandboxes and
// exits.
func serveHTTPForTests(addr string) int {
	token := os.Getenv(httpTokenEnv)
	srv, logger, err := testServer("sandboxkit-reference-http", token)
	if err != nil {
		return 2
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		logger.Error("listen", "error", err.Error())
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	o := &server.HTTPOptions{Token: token}
	if limit, err := strconv.Atoi(os.Getenv(httpCapsEnv)); err == nil {
		o = &server.HTTPOptions{MaxSessions: limit, ClientIPHeader: forwardedFor}
	}
	hs := srv.HTTPServer(o)
	go func() { _ = hs.Serve(ln) }()
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := 0
	if err := srv.Shutdown(sctx); err != nil {
		code = 1
	}
	_ = hs.Shutdown(sctx)
	return code
}

// posingFake is a fake provider on loopback posing as a real one, with one
// sandbox that belongs to someone else: no run may ever touch it.
type posingFake struct {
	p       *fakeprovider.Provider
	srv     *fakeprovider.Server
	foreign string
}

// cloudParentTest starts a test that runs cloud children: it is skipped
// inside a child run, runs in parallel, and gets its own posing fake.
func cloudParentTest(t *testing.T) *posingFake {
	t.Helper()
	if os.Getenv(cloudChildEnv) != "" {
		t.Skip("inside a child run")
	}
	t.Parallel()
	return newPosingFake(t)
}

// specFailed reports whether a run's summary lists the spec as failed.
func specFailed(out []byte, id string) bool {
	return regexp.MustCompile(`(?m)^\s+FAIL ` + regexp.QuoteMeta(id) + ` `).Match(out)
}

func newPosingFake(t *testing.T) *posingFake {
	t.Helper()
	p := fakeprovider.New(nil) // the system clock, as a real provider
	srv := p.Start(t)
	foreign := p.AddSandbox(fakeprovider.SandboxSeed{StartedAt: time.Now().Add(-time.Hour), EndAt: time.Now().Add(time.Hour),
		Metadata: map[string]string{"owner": "someone-else"}})
	return &posingFake{p: p, srv: srv, foreign: foreign}
}

func (f *posingFake) env() []string {
	return []string{
		sandbox.EnvAPIURL + "=" + f.srv.URL(),
		sandbox.EnvAPIKey + "=" + f.p.APIKey(),
		sandbox.EnvDomain + "=" + fakeprovider.DomainSuffix,
		sandbox.EnvSandboxURL + "=" + f.srv.URL(),
	}
}

func (f *posingFake) getenv(k string) string {
	for _, kv := range f.env() {
		if key, v, _ := strings.Cut(kv, "="); key == k {
			return v
		}
	}
	return ""
}

func (f *posingFake) host() string {
	u, _ := url.Parse(f.srv.URL())
	return u.Host
}

// liveIDs lists the fake's live sandboxes.
func (f *posingFake) liveIDs() []string {
	var ids []string
	for _, r := range f.p.LiveSandboxes() {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	return ids
}

// expectOnlyForeignLeft fails unless the only live sandbox is the foreign
// one, and nothing ever destroyed it.
func (f *posingFake) expectOnlyForeignLeft(t *testing.T) {
	t.Helper()
	if got := f.liveIDs(); !slices.Equal(got, []string{f.foreign}) {
		t.Errorf("live sandboxes after the run: %v, want only the foreign %s", got, f.foreign)
	}
	for _, e := range f.p.Journal().Calls(sandbox.OpKillSandbox) {
		if e.SandboxID == f.foreign {
			t.Errorf("the run destroyed the foreign sandbox %s (User-Agent %q)", f.foreign, e.Header.Get("User-Agent"))
		}
	}
}

// expectKitNeverListed fails when the kit's own SDK listed the account.
func (f *posingFake) expectKitNeverListed(t *testing.T) {
	t.Helper()
	for _, e := range f.p.Journal().Calls(sandbox.OpListSandboxes) {
		if e.Header.Get("User-Agent") == kitUserAgent {
			t.Errorf("the kit's SDK listed the account (it must destroy by ID only)")
		}
	}
}

type cloudChild struct {
	mode, filter         string
	stateDir, runID, dir string // dir: evidence directory, "" for none
	httpAddr             string // mode http: where the server command listens
}

func (c cloudChild) command(f *posingFake) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCloudChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), f.env()...)
	cmd.Env = append(cmd.Env, cloudChildEnv+"="+c.mode, cloudStateEnv+"="+c.stateDir, cloudRunIDEnv+"="+c.runID,
		cloudEvidenceEnv+"="+c.dir, cloudFilterEnv+"="+c.filter, cloudForeignEnv+"="+f.foreign, cloudHTTPAddrEnv+"="+c.httpAddr)
	return cmd
}

// run runs the child with its report: a failure explains itself with the
// failed specs' messages (childRun.explain).
func (c cloudChild) run(t *testing.T, f *posingFake) *childRun {
	t.Helper()
	return runChildCmd(t, c.command(f))
}

// TestCloudChild runs the kit in cloud mode; the parent tests start it.
func TestCloudChild(t *testing.T) {
	mode := os.Getenv(cloudChildEnv)
	if mode == "" {
		t.Skip("run by the cloud-mode tests")
	}
	cfg := NewConfig()
	cfg.Cloud = true
	cfg.StateDir = os.Getenv(cloudStateEnv)
	cfg.RunID = os.Getenv(cloudRunIDEnv)
	seams := testSeams{cloudSettle: 3 * time.Second}
	switch mode {
	case "pass":
	case "stdio":
		cfg.ServerCommand = []string{os.Args[0]}
		cfg.ServerEnv = []string{stdioServerEnv + "=1"}
		cfg.CallTimeout = raceServerCallTimeout
	case "http":
		targetTestHTTPServer(cfg, os.Getenv(cloudHTTPAddrEnv))
		cfg.CallTimeout = raceServerCallTimeout
	case "claims-foreign":
		seams.breakage = claimsForeignAsCreated(os.Getenv(cloudForeignEnv))
	case "skips-cleanup":
		seams.breakage = skipsCleanup()
	case "leaks-key":
		seams.breakage = leaksKeyInErrors()
	case "create-fails-with-key":
		seams.breakage = createFailsWithKey()
	case "hangs":
		seams.breakage = hangsOnSetTimeout()
	default:
		t.Fatalf("unknown mode %q", mode)
	}
	runKit(t, cfg, childOptions(&RunOptions{EvidenceDir: os.Getenv(cloudEvidenceEnv), LabelFilter: os.Getenv(cloudFilterEnv)}), seams)
}

// raceServerCallTimeout bounds each MCP request of a cloud child whose
// server is this test binary in a process of its own: a hang guard, not a
// margin. Built with -race and beside other tests on a loaded machine, its
// answer to binary.upload-over-cap's 22 MB message came as an error, not a
// tool result, most likely at the default bound of 30 s.
const raceServerCallTimeout = 3 * time.Minute

// targetTestHTTPServer points cfg at this test binary started as the
// reference server over Streamable HTTP on addr, with the test bearer
// token; env adds to the server's environment.
func targetTestHTTPServer(cfg *Config, addr string, env ...string) {
	cfg.ServerCommand = []string{os.Args[0]}
	cfg.ServerEnv = append([]string{httpServerEnv + "=" + addr, httpTokenEnv + "=" + testHTTPToken}, env...)
	cfg.ServerURL = "http://" + addr + server.MCPPath
	cfg.Headers = map[string]string{"Authorization": "Bearer " + testHTTPToken}
}

// leaksKeyInErrors adds the provider API key to every tool error.
func leaksKeyInErrors() *breakage {
	return &breakage{middleware: func(env breakEnv) mcp.Middleware {
		return func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				res, err := next(ctx, method, req)
				if _, _, ok := toolCall(method, req); ok && err == nil {
					appendText(res, "debug: key "+env.apiKey)
				}
				return res, err
			}
		}
	}}
}

// createFailsWithKey answers every create_sandbox, without creating
// anything, with a tool error whose text holds the provider API key.
func createFailsWithKey() *breakage {
	return &breakage{middleware: func(env breakEnv) mcp.Middleware {
		return func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if name, _, ok := toolCall(method, req); ok && name == "create_sandbox" {
					text := `{"error":{"category":"internal","recovery":"debug: key ` + env.apiKey + `"}}`
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
				}
				return next(ctx, method, req)
			}
		}
	}}
}

// hangsOnSetTimeout blocks the server's set-timeout requests until they
// are abandoned: a run that stops there is interrupted mid-spec, after
// creating a sandbox.
func hangsOnSetTimeout() *breakage {
	return &breakage{transport: func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if strings.HasSuffix(r.URL.Path, "/timeout") && r.Method == http.MethodPost {
				<-r.Context().Done()
				return nil, r.Context().Err()
			}
			return rt.RoundTrip(r)
		})
	}}
}

// TestCloudModeRefusesWithoutCredentials: cloud mode never starts, and
// never falls back to the fake, without a provider key.
func TestCloudModeRefusesWithoutCredentials(t *testing.T) {
	t.Setenv(sandbox.EnvAPIKey, "")
	state := t.TempDir()
	cfg := NewConfig()
	cfg.Cloud = true
	cfg.StateDir = state
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), sandbox.EnvAPIKey) {
		t.Fatalf("Validate without credentials: %v, want an error naming %s", err, sandbox.EnvAPIKey)
	}
	var out bytes.Buffer
	ft := &failT{}
	if RunWith(ft, cfg, &RunOptions{Summary: &out}) || !ft.failed {
		t.Fatal("RunWith in cloud mode without credentials must fail")
	}
	if !strings.Contains(out.String(), "not started") || !strings.Contains(out.String(), sandbox.EnvAPIKey) {
		t.Errorf("RunWith said %q, want a refusal naming %s", out.String(), sandbox.EnvAPIKey)
	}
	if entries, _ := os.ReadDir(state); len(entries) != 0 {
		t.Errorf("a refused run wrote state files: %v", entries)
	}
	// Credentials may come from ServerEnv too, as for the server.
	cfg.ServerEnv = []string{sandbox.EnvAPIKey + "=e2b_" + strings.Repeat("0", 40)}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate with the key in ServerEnv: %v", err)
	}
	cfg.FakeAPIKey = "e2b_1234"
	if err := cfg.Validate(); err == nil {
		t.Error("cloud mode with a fake API key must not validate")
	}
}

type failT struct{ failed bool }

func (t *failT) Fail() { t.failed = true }

// TestCloudModeAgainstLoopbackFake runs every spec that needs no fake, and
// the cloud-only specs, in cloud mode against a fake posing as a real
// provider: they pass, every sandbox the run created is gone, the foreign
// sandbox is untouched, the kit never lists, and the evidence bundle holds
// no secret and is refused as cloud evidence only because its API host is
// loopback.
func TestCloudModeAgainstLoopbackFake(t *testing.T) {
	f := cloudParentTest(t)
	child := cloudChild{mode: "pass", stateDir: t.TempDir(), runID: "cloud-pass", dir: filepath.Join(t.TempDir(), "bundle")}
	r := child.run(t, f)
	if r.err != nil {
		t.Fatalf("the cloud run against the posing fake failed: %s", r.explain())
	}
	f.expectOnlyForeignLeft(t)
	f.expectKitNeverListed(t)

	rec, err := cloudstate.ReadRun(child.stateDir, child.runID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.EndedAt == nil || rec.APIHost != f.host() || rec.ProviderID != sandbox.DefaultProviderID {
		t.Errorf("state file: ended %v, API host %q, provider %q", rec.EndedAt, rec.APIHost, rec.ProviderID)
	}
	sources := map[string]int{}
	for _, s := range rec.Sandboxes {
		sources[s.Source]++
		if s.State == cloudstate.SandboxAlive || s.ID == f.foreign {
			t.Errorf("state file: %+v", s)
		}
	}
	if sources[cloudstate.SourceCreate] < 5 || sources[cloudstate.SourceImplicit] < 5 || sources[cloudstate.SourceKit] != 1 {
		t.Errorf("tracked sandboxes by source: %v; want create_sandbox and implicit ones, and the kit's one external", sources)
	}

	// The bundle: everything a cloud run requires passed; the loopback host
	// makes it loopback evidence, never cloud evidence.
	expectLoopbackEvidenceOfCloudRun(t, child.dir)
	b, err := evidence.Read(child.dir)
	if err != nil {
		t.Fatal(err)
	}
	m := b.Manifest
	// A cloud run against a loopback host is loopback evidence, checked
	// against the cloud run's required list.
	if m.Mode != evidence.ModeLoopback || m.KitMode != evidence.ModeCloud || m.APIHost != f.host() || m.ProviderID != "e2b" || m.Transport != "in-process" || m.Server.Name != "sandboxkit-reference" {
		t.Errorf("manifest: %+v", m)
	}
	if m.Cleanup == nil || m.Cleanup.Tracked != len(rec.Sandboxes) || len(m.Cleanup.Failed) != 0 || m.Cleanup.DestroyedByKit < 1 {
		t.Errorf("manifest cleanup: %+v (state file has %d)", m.Cleanup, len(rec.Sandboxes))
	}
	cloudRan := 0
	for _, r := range b.Results {
		if r.Family == string(FamilyCloud) {
			cloudRan++
			if !r.Passed() {
				t.Errorf("%s %s: %s", r.ID, r.State, r.Message)
			}
		}
	}
	if cloudRan != len(cloudSpecs()) {
		t.Errorf("%d cloud-only results, want %d", cloudRan, len(cloudSpecs()))
	}
	expectNoFakeSecrets(t, f, child.dir)
}

// expectNoFakeSecrets fails when a bundle file holds the fake's API key or
// any of its canaries.
func expectNoFakeSecrets(t *testing.T, f *posingFake, dir string) {
	t.Helper()
	expectNotInBundle(t, dir, f.p.Canaries()...)
}

// TestCloudModeStdioTarget runs the cloud-only specs against a stdio server
// (this test binary) that gets the real environment, not the fake's.
func TestCloudModeStdioTarget(t *testing.T) {
	f := cloudParentTest(t)
	child := cloudChild{mode: "stdio", filter: string(FamilyCloud), stateDir: t.TempDir(), runID: "cloud-stdio", dir: filepath.Join(t.TempDir(), "bundle")}
	r := child.run(t, f)
	if r.err != nil {
		t.Fatalf("the cloud run against a stdio server failed: %s", r.explain())
	}
	f.expectOnlyForeignLeft(t)
	f.expectKitNeverListed(t)
	expectStateAllDestroyed(t, child.stateDir, child.runID)
	b, err := evidence.Read(child.dir)
	if err != nil {
		t.Fatal(err)
	}
	if b.Manifest.Transport != "stdio" || b.Manifest.Server.Name != "sandboxkit-reference-stdio" {
		t.Errorf("manifest: transport %q, server %q", b.Manifest.Transport, b.Manifest.Server.Name)
	}
	if c := evidence.Count(b.Results); c.Passed != len(cloudSpecs()) || c.Failed != 0 {
		t.Errorf("results: %+v, want the %d cloud-only specs passed", c, len(cloudSpecs()))
	}
	expectNoFakeSecrets(t, f, child.dir)
}

// TestCloudModeDestroysWhatTheServerLeaves: a server that never destroys
// its sandboxes fails the cloud-only specs that check it, and the kit still
// destroys every sandbox the run created, and nothing else.
func TestCloudModeDestroysWhatTheServerLeaves(t *testing.T) {
	f := cloudParentTest(t)
	child := cloudChild{mode: "skips-cleanup", filter: string(FamilyCloud), stateDir: t.TempDir(), runID: "cloud-skips-cleanup", dir: filepath.Join(t.TempDir(), "bundle")}
	out, err := child.command(f).CombinedOutput()
	if err == nil {
		t.Fatalf("a server that never destroys its sandboxes passed the cloud-only specs\n%s", tail(out))
	}
	for _, id := range []string{"cloud.close-destroys-owned-spares-external", "cloud.close-destroys-implicit"} {
		if !specFailed(out, id) {
			t.Errorf("%s did not fail\n%s", id, tail(out))
		}
	}
	f.expectOnlyForeignLeft(t)
	f.expectKitNeverListed(t)
	rec, err := cloudstate.ReadRun(child.stateDir, child.runID)
	if err != nil {
		t.Fatal(err)
	}
	destroyed := 0
	for _, s := range rec.Sandboxes {
		if s.State == cloudstate.SandboxDestroyed {
			destroyed++
		}
		if s.State == cloudstate.SandboxAlive {
			t.Errorf("still alive in the state file: %+v", s)
		}
	}
	if destroyed < len(cloudSpecs()) {
		t.Errorf("the kit destroyed %d sandboxes, want at least one per cloud-only spec", destroyed)
	}
	b, err := evidence.Read(child.dir)
	if err != nil {
		t.Fatal(err)
	}
	if b.Manifest.Cleanup == nil || b.Manifest.Cleanup.DestroyedByKit != destroyed {
		t.Errorf("manifest cleanup %+v, want %d destroyed by the kit", b.Manifest.Cleanup, destroyed)
	}
}

// TestCloudModeCatchesLeakedKeyAndRedactsIt: a server that puts the API key
// into tool errors fails the token scan, and the evidence still holds no
// key: it is redacted before anything is written.
func TestCloudModeCatchesLeakedKeyAndRedactsIt(t *testing.T) {
	f := cloudParentTest(t)
	child := cloudChild{mode: "leaks-key", filter: "cloud.tokens-absent-from-results", stateDir: t.TempDir(), runID: "cloud-leaks-key", dir: filepath.Join(t.TempDir(), "bundle")}
	out, err := child.command(f).CombinedOutput()
	if err == nil {
		t.Fatalf("a server leaking the API key passed the token scan\n%s", tail(out))
	}
	if !specFailed(out, "cloud.tokens-absent-from-results") {
		t.Errorf("cloud.tokens-absent-from-results did not fail\n%s", tail(out))
	}
	if bytes.Contains(out, []byte(f.p.APIKey())) {
		t.Error("the run's own output shows the API key")
	}
	f.expectOnlyForeignLeft(t)
	expectNoFakeSecrets(t, f, child.dir)
	tr, err := os.ReadFile(filepath.Join(child.dir, evidence.FileTranscript))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(tr, []byte("debug: key "+evidence.Redacted)) {
		t.Error("the transcript should show where the key was, redacted")
	}
}

// TestCloudModeRedactsFailureMessages: a failed assertion whose message
// quotes a tool result (here a create_sandbox error holding the API key)
// reaches the console and the reports redacted.
func TestCloudModeRedactsFailureMessages(t *testing.T) {
	f := cloudParentTest(t)
	child := cloudChild{mode: "create-fails-with-key", filter: "cloud.create-matches-platform", stateDir: t.TempDir(), runID: "cloud-fails-with-key",
		dir: filepath.Join(t.TempDir(), "bundle")}
	out, err := child.command(f).CombinedOutput()
	if err == nil {
		t.Fatalf("a server failing every create passed\n%s", tail(out))
	}
	if !bytes.Contains(out, []byte("unexpected tool error")) || !bytes.Contains(out, []byte("debug: key "+evidence.Redacted)) {
		t.Errorf("the failure message should quote the tool error, redacted\n%s", tail(out))
	}
	if bytes.Contains(out, []byte(f.p.APIKey())) {
		t.Errorf("the run's own output shows the API key\n%s", tail(out))
	}
	f.expectOnlyForeignLeft(t)
	expectNoFakeSecrets(t, f, child.dir)
}

// TestSweepAfterInterruptedRun kills a cloud run in the middle of a spec,
// then sweeps it: exactly the sandboxes the run created are destroyed.
func TestSweepAfterInterruptedRun(t *testing.T) {
	f := cloudParentTest(t)
	child := cloudChild{mode: "hangs", filter: "cloud.set-timeout-moves-end", stateDir: t.TempDir(), runID: "cloud-interrupted"}
	cmd := child.command(f)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitTracked(t, cmd, child, "", &out)
	_ = cmd.Process.Kill() // SIGKILL: no cleanup runs
	_ = cmd.Wait()
	rec, err := cloudstate.ReadRun(child.stateDir, child.runID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.EndedAt != nil {
		t.Fatal("the killed run claims to have ended")
	}
	left := f.liveIDs()
	if len(left) < 2 {
		t.Fatalf("live after the interruption: %v; the test needs a leftover besides the foreign sandbox", left)
	}

	// The environment must point where the run created its sandboxes.
	elsewhere := func(k string) string {
		if k == sandbox.EnvAPIURL {
			return "http://127.0.0.1:1"
		}
		return f.getenv(k)
	}
	if _, err := cloudstate.Sweep(context.Background(), &cloudstate.SweepOptions{RunID: child.runID, StateDir: child.stateDir, Getenv: elsewhere}); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("sweep against another API host: %v, want a refusal", err)
	}
	res, err := cloudstate.Sweep(context.Background(), &cloudstate.SweepOptions{RunID: child.runID, StateDir: child.stateDir, Getenv: f.getenv})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Destroyed) != len(left)-1 {
		t.Errorf("sweep destroyed %v; live before it were %v", res.Destroyed, left)
	}
	f.expectOnlyForeignLeft(t)
	again, err := cloudstate.Sweep(context.Background(), &cloudstate.SweepOptions{RunID: child.runID, StateDir: child.stateDir, Getenv: f.getenv})
	if err != nil || len(again.Destroyed)+len(again.AlreadyGone)+len(again.Failed) != 0 {
		t.Errorf("a second sweep: %+v, %v; want nothing to do", again, err)
	}
}

// TestSweepOnlyDestroysTheRunsSandboxes checks sweeping without a child
// run: only the IDs of the state file, never a listing, not while the run's
// process lives (unless forced), a sandbox already gone is fine, and one
// the server claimed but that started before the run is left alone.
func TestSweepOnlyDestroysTheRunsSandboxes(t *testing.T) {
	f := newPosingFake(t)
	a := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	b := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	gone := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	old := f.p.AddSandbox(fakeprovider.SandboxSeed{StartedAt: time.Now().Add(-10 * time.Minute), EndAt: time.Now().Add(time.Hour)})
	dir := t.TempDir()
	host, _ := os.Hostname()
	tr, err := cloudstate.NewTracker(dir, cloudstate.RunRecord{Format: cloudstate.RecordFormat, RunID: "unit-run", ProviderID: "e2b", APIHost: f.host(),
		Host: host, PID: os.Getpid(), StartedAt: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{a, gone, old} {
		tr.Track(id, cloudstate.SourceCreate, "unit")
	}
	tr.Track(b, cloudstate.SourceKit, "unit")
	if _, err := cloudstate.NewTracker(dir, cloudstate.RunRecord{RunID: "unit-run"}); err == nil {
		t.Error("a second run with the same ID must be refused")
	}
	p, err := sandbox.NewPlatform(&sandbox.Options{Getenv: f.getenv})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.KillByID(context.Background(), gone, nil); err != nil {
		t.Fatal(err)
	}
	f.p.Journal().Reset()

	_, err = cloudstate.Sweep(context.Background(), &cloudstate.SweepOptions{RunID: "unit-run", StateDir: dir, Getenv: f.getenv})
	if !errors.Is(err, cloudstate.ErrRunInProgress) {
		t.Fatalf("sweeping a run whose process lives: %v, want ErrRunInProgress", err)
	}
	noKey := func(k string) string {
		if k == sandbox.EnvAPIKey {
			return ""
		}
		return f.getenv(k)
	}
	if _, err := cloudstate.Sweep(context.Background(), &cloudstate.SweepOptions{RunID: "unit-run", StateDir: dir, Getenv: noKey, Force: true}); err == nil {
		t.Error("sweeping without credentials must fail")
	}
	res, err := cloudstate.Sweep(context.Background(), &cloudstate.SweepOptions{RunID: "unit-run", StateDir: dir, Getenv: f.getenv, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(res.Destroyed)
	want := []string{a, b}
	slices.Sort(want)
	if !slices.Equal(res.Destroyed, want) || !slices.Equal(res.AlreadyGone, []string{gone}) || !slices.Equal(res.NotCreated, []string{old}) {
		t.Errorf("sweep: destroyed %v, already gone %v, left alone %v; want %v, [%s] and [%s]", res.Destroyed, res.AlreadyGone, res.NotCreated, want, gone, old)
	}
	if live := f.liveIDs(); !slices.Contains(live, old) || !slices.Contains(live, f.foreign) || len(live) != 2 {
		t.Errorf("live after the sweep: %v, want only the foreign %s and the old %s", live, f.foreign, old)
	}
	for _, e := range f.p.Journal().Entries() {
		if e.Op != sandbox.OpKillSandbox && e.Op != sandbox.OpGetSandbox {
			t.Errorf("sweep made a %s request; it may only read and destroy by ID", e.Op)
		}
		if e.Op == sandbox.OpKillSandbox && (e.SandboxID == old || e.SandboxID == f.foreign) {
			t.Errorf("sweep destroyed %s, which the run did not create", e.SandboxID)
		}
	}
	runs, err := cloudstate.ListRuns(dir)
	if err != nil || len(runs) != 1 || runs[0].Alive() != 0 {
		t.Errorf("ListRuns after the sweep: %+v, %v", runs, err)
	}
	if _, err := cloudstate.Sweep(context.Background(), &cloudstate.SweepOptions{RunID: "../etc/passwd", StateDir: dir}); err == nil {
		t.Error("a malformed run ID must be refused")
	}
}

// TestCloudBackendDestroysOnlyTracked checks the end-of-run destruction:
// every tracked sandbox is destroyed by ID, an untracked one is refused.
func TestCloudBackendDestroysOnlyTracked(t *testing.T) {
	f := newPosingFake(t)
	cfg := NewConfig()
	cfg.Cloud = true
	cfg.StateDir = t.TempDir()
	cfg.ServerEnv = f.env() // the kit reads the provider's environment through ServerEnv too
	c, err := newCloudBackend(cfg, "unit-backend")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ext, err := c.createExternal(ctx, "unit", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	seeded := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	c.noteForeign(seeded)
	if c.track(seeded, cloudstate.SourceImplicit, "unit") {
		t.Error("an ID seen as someone else's must never be tracked")
	}
	if err := c.destroy(ctx, f.foreign); err == nil {
		t.Error("destroying an untracked sandbox must be refused")
	}
	if _, ok, err := c.info(ctx, ext); !ok || err != nil {
		t.Fatalf("the kit cannot read its own sandbox: %v", err)
	}
	if c.secrets.count()["envdAccessToken"] == 0 && c.secrets.count()["sandbox domain"] == 0 {
		t.Errorf("the kit's SDK saw no token nor domain: %v", c.secrets.count())
	}
	if failed := c.finishAll(ctx); len(failed) != 0 {
		t.Fatalf("finishAll failed for %v", failed)
	}
	got := f.liveIDs()
	want := []string{f.foreign, seeded}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("live after finishAll: %v, want %v", got, want)
	}
	rec, err := cloudstate.ReadRun(cfg.StateDir, "unit-backend")
	if err != nil || rec.EndedAt == nil || rec.Alive() != 0 {
		t.Errorf("state file after finishAll: %+v, %v", rec, err)
	}
}

// TestCloudClockSkewIsTheSweeps keeps one clock skew: the cloud specs'
// tolerance and the one by which the kit and sweep leave alone a sandbox
// that started before the run.
func TestCloudClockSkewIsTheSweeps(t *testing.T) {
	if cloudClockSkew != cloudstate.ClockSkew {
		t.Errorf("cloudClockSkew = %s, cloudstate.ClockSkew = %s: want one skew", cloudClockSkew, cloudstate.ClockSkew)
	}
}
