package conformance

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/conformance/cloudstate"
	"github.com/sandboxkit/sandboxkit/evidence"
)

// testHTTPToken is the bearer token of the HTTP server the cloud tests
// start; the kit sends it as a header, so the bundle must not hold it.
const testHTTPToken = "sbxkit-test-bearer-0f1e2d3c4b5a69788796a5b4"

// claimsForeignAsCreated reports the foreign sandbox as the one
// create_sandbox created (the sandbox it really created stays the
// session's and is destroyed at close): a server that would lead the kit
// to destroy someone else's sandbox.
func claimsForeignAsCreated(foreign string) *breakage {
	return &breakage{middleware: func(breakEnv) mcp.Middleware {
		return func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				res, err := next(ctx, method, req)
				if name, _, ok := toolCall(method, req); ok && err == nil && name == "create_sandbox" {
					editToolResult(res, func(m map[string]any) { m["sandbox_id"] = foreign })
				}
				return res, err
			}
		}
	}}
}

// freeLoopbackAddr returns a loopback address with a port free right now.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// expectStateAllDestroyed fails unless the run's state file says the run
// ended and none of its sandboxes may still exist.
func expectStateAllDestroyed(t *testing.T, stateDir, runID string) *cloudstate.RunRecord {
	t.Helper()
	rec, err := cloudstate.ReadRun(stateDir, runID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.EndedAt == nil {
		t.Error("the state file says the run never ended")
	}
	for _, s := range rec.Sandboxes {
		if s.State == cloudstate.SandboxAlive {
			t.Errorf("still alive in the state file: %+v", s)
		}
	}
	return rec
}

// TestCloudModeHTTPTarget runs every spec cloud mode runs against a
// Streamable HTTP server that the kit starts (this test binary, with a
// bearer token): they pass, every sandbox the run created is gone, the
// foreign one is untouched, and the bundle says http, holds the server's
// log, neither the token nor any secret of the provider, and verifies but
// for its loopback API host.
func TestCloudModeHTTPTarget(t *testing.T) {
	f := cloudParentTest(t)
	child := cloudChild{mode: "http", stateDir: t.TempDir(), runID: "cloud-http", dir: filepath.Join(t.TempDir(), "bundle"),
		httpAddr: freeLoopbackAddr(t)}
	r := child.run(t, f)
	out := r.out
	if r.err != nil {
		t.Fatalf("the cloud run against an HTTP server failed: %s", r.explain())
	}
	if bytes.Contains(out, []byte(testHTTPToken)) {
		t.Error("the run's own output shows the bearer token")
	}
	f.expectOnlyForeignLeft(t)
	f.expectKitNeverListed(t)
	rec := expectStateAllDestroyed(t, child.stateDir, child.runID)

	expectLoopbackEvidenceOfCloudRun(t, child.dir)
	b, err := evidence.Read(child.dir)
	if err != nil {
		t.Fatal(err)
	}
	m := b.Manifest
	if m.Transport != string(TargetHTTP) || m.Server.Name != "sandboxkit-reference-http" || m.APIHost != f.host() || m.ProviderID != "e2b" {
		t.Errorf("manifest: transport %q, server %+v, API host %q, provider %q", m.Transport, m.Server, m.APIHost, m.ProviderID)
	}
	if h, _ := m.Config["headers"].(map[string]any); h["Authorization"] != evidence.Redacted {
		t.Errorf("manifest config headers: %v, want the value redacted", m.Config["headers"])
	}
	if m.Cleanup == nil || m.Cleanup.Tracked != len(rec.Sandboxes) || m.Cleanup.Tracked == 0 || len(m.Cleanup.Failed) != 0 {
		t.Errorf("manifest cleanup: %+v (state file has %d)", m.Cleanup, len(rec.Sandboxes))
	}
	if !strings.Contains(b.ServerLog, "session closed") {
		t.Errorf("server.log does not hold the server's stderr:\n%.500s", b.ServerLog)
	}
	for _, r := range b.Results {
		if r.Passed() && (len(r.Rules) == 0 || r.DurationMS < 0) {
			t.Errorf("result %s: rules %v, duration %d ms", r.ID, r.Rules, r.DurationMS)
		}
	}
	expectNotInBundle(t, child.dir, append(f.p.Canaries(), testHTTPToken)...)
}

// expectNotInBundle fails when a bundle file holds one of the values.
func expectNotInBundle(t *testing.T, dir string, values ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		data = bytes.ToLower(data)
		for _, v := range values {
			if bytes.Contains(data, bytes.ToLower([]byte(v))) {
				t.Errorf("%s holds a secret (%.8s...)", e.Name(), v)
			}
		}
	}
}

// TestCloudModeNeverDestroysASandboxTheServerClaims: a server that reports
// someone else's sandbox (started before the run) as the one it created
// fails the spec, and the kit leaves that sandbox alone: the run destroys
// only what it created, whatever the server says.
func TestCloudModeNeverDestroysASandboxTheServerClaims(t *testing.T) {
	f := cloudParentTest(t)
	child := cloudChild{mode: "claims-foreign", filter: "cloud.create-matches-platform", stateDir: t.TempDir(), runID: "cloud-claims-foreign",
		dir: filepath.Join(t.TempDir(), "bundle")}
	out, err := child.command(f).CombinedOutput()
	if err == nil {
		t.Fatalf("a server claiming a foreign sandbox as created passed\n%s", tail(out))
	}
	if !specFailed(out, "cloud.create-matches-platform") {
		t.Errorf("cloud.create-matches-platform did not fail\n%s", tail(out))
	}
	if !bytes.Contains(out, []byte("started before the run")) {
		t.Errorf("the run does not say why it left %s alone\n%s", f.foreign, tail(out))
	}
	f.expectOnlyForeignLeft(t)
	f.expectKitNeverListed(t)
	rec := expectStateAllDestroyed(t, child.stateDir, child.runID)
	found := false
	for _, s := range rec.Sandboxes {
		if s.ID == f.foreign {
			found = true
			if s.State != cloudstate.SandboxNotCreated {
				t.Errorf("the foreign sandbox in the state file: %+v, want state %s", s, cloudstate.SandboxNotCreated)
			}
		}
	}
	if !found {
		t.Errorf("the state file does not record the claimed sandbox %s", f.foreign)
	}
	b, err := evidence.Read(child.dir)
	if err != nil {
		t.Fatal(err)
	}
	if c := b.Manifest.Cleanup; c == nil || len(c.NotCreated) != 1 || c.NotCreated[0] != f.foreign || len(c.Failed) != 0 {
		t.Errorf("manifest cleanup %+v, want only the claimed %s as not created by the run", c, f.foreign)
	}
	// Sweeping the run leaves it alone too.
	res, err := cloudstate.Sweep(context.Background(), &cloudstate.SweepOptions{RunID: child.runID, StateDir: child.stateDir, Getenv: f.getenv})
	if err != nil || len(res.Destroyed) != 0 {
		t.Errorf("sweep after the run: %+v, %v", res, err)
	}
	f.expectOnlyForeignLeft(t)
}

// TestCloudRunInterruptedBySIGINT interrupts a cloud run in the middle of a
// spec (as Ctrl-C does): the run still destroys everything it created,
// ends its state file and writes its bundle; a sweep has nothing left to
// do.
func TestCloudRunInterruptedBySIGINT(t *testing.T) {
	f := cloudParentTest(t)
	// The specs run in catalog order: set-timeout hangs, tokens comes after.
	child := cloudChild{mode: "hangs", filter: "cloud.set-timeout-moves-end || cloud.tokens-absent-from-results", stateDir: t.TempDir(), runID: "cloud-sigint",
		dir: filepath.Join(t.TempDir(), "bundle")}
	cmd := child.command(f)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitTracked(t, cmd, child, "cloud.set-timeout-moves-end", &out)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("an interrupted run exited 0\n%s", tail(out.Bytes()))
		}
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the interrupted run did not end within a minute\n%s", tail(out.Bytes()))
	}
	f.expectOnlyForeignLeft(t)
	expectStateAllDestroyed(t, child.stateDir, child.runID)
	b, err := evidence.Read(child.dir)
	if err != nil {
		t.Fatalf("the interrupted run wrote no bundle: %v\n%s", err, tail(out.Bytes()))
	}
	for _, r := range b.Results {
		switch r.ID {
		case "cloud.set-timeout-moves-end":
			if r.State != "interrupted" {
				t.Errorf("%s: %s, want interrupted", r.ID, r.State)
			}
		case "cloud.tokens-absent-from-results":
			if !r.Skipped() || !strings.Contains(strings.ToLower(r.Message), "interrupted") {
				t.Errorf("%s: %s, %q; want skipped, naming the interruption", r.ID, r.State, r.Message)
			}
		case "cloud.list-shows-created":
			if r.Message != "not selected" {
				t.Errorf("%s: %q, want not selected", r.ID, r.Message)
			}
		}
	}
	res, err := cloudstate.Sweep(context.Background(), &cloudstate.SweepOptions{RunID: child.runID, StateDir: child.stateDir, Getenv: f.getenv})
	if err != nil || len(res.Destroyed)+len(res.AlreadyGone)+len(res.Failed) != 0 {
		t.Errorf("sweep after the interrupted run: %+v, %v; want nothing to do", res, err)
	}
}

// waitTracked waits until the child run has tracked a live sandbox for the
// spec (any spec when spec is ""); it kills the child and fails the test when none is tracked within
// a minute.
func waitTracked(t *testing.T, cmd *exec.Cmd, child cloudChild, spec string, out *bytes.Buffer) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if rec, err := cloudstate.ReadRun(child.stateDir, child.runID); err == nil {
			for _, s := range rec.Sandboxes {
				if (spec == "" || s.Spec == spec) && s.State == cloudstate.SandboxAlive {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the run never tracked a sandbox\n%s", tail(out.Bytes()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTokenScanRunsLast: the token scan reads the transcripts of every spec
// that ran before it, so it must be the last spec of the catalog (specs run
// in catalog order).
func TestTokenScanRunsLast(t *testing.T) {
	all := Specs()
	if last := all[len(all)-1].ID; last != "cloud.tokens-absent-from-results" {
		t.Errorf("the last spec is %s; the token scan must run last", last)
	}
}

// expectLoopbackEvidenceOfCloudRun checks the bundle of a cloud run against
// the fake posing as a real provider on loopback: it is loopback evidence
// that verifies (against the cloud run's required list), and never verifies
// as cloud evidence.
func expectLoopbackEvidenceOfCloudRun(t *testing.T, dir string) {
	t.Helper()
	if err := evidence.Verify(dir, nil); err != nil {
		t.Fatalf("Verify: %v; a cloud run against a loopback host must verify as loopback evidence", err)
	}
	err := evidence.Verify(dir, &evidence.VerifyOptions{Cloud: true})
	if err == nil || !strings.Contains(err.Error(), "never verifies as cloud evidence") {
		t.Errorf("Verify --cloud: %v; loopback evidence must never verify as cloud evidence", err)
	}
}

func TestControlPlanePath(t *testing.T) {
	for p, want := range map[string]bool{
		"/sandboxes": true, "/sandboxes/abc": true, "/sandboxes/abc/timeout": true, "/v2/sandboxes": true,
		"/api/e2b/sandboxes/abc": true, "/api/e2b/v2/sandboxes": true,
		"/files": false, "/process.Process/Start": false, "/health": false, "/sandboxesx": false,
	} {
		if got := controlPlanePath(p); got != want {
			t.Errorf("controlPlanePath(%q) = %v, want %v", p, got, want)
		}
	}
}
