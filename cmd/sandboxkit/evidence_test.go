package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/conformance"
	"github.com/sandboxkit/sandboxkit/evidence"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// run executes the command line and returns its output and error.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// bundle writes a bundle of the mode whose every required spec passed.
func bundle(t *testing.T, mode evidence.Mode, apiHost string) string {
	t.Helper()
	ids, err := evidence.Required(conformance.Version, mode)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	b := &evidence.Bundle{Manifest: evidence.Manifest{Mode: mode, RunID: "cli-test", KitVersion: conformance.Version,
		KitRevision: "0123abcd", ProviderID: "e2b", APIHost: apiHost, Transport: "stdio", StartedAt: start, EndedAt: start.Add(time.Minute)}}
	for _, id := range ids {
		b.Results = append(b.Results, evidence.SpecResult{ID: id, State: "passed", Rules: []string{"META-1"}})
		b.Transcript = append(b.Transcript, evidence.Exchange{Spec: id, Seq: 1, Session: 1, Tool: "get_sandbox", Arguments: json.RawMessage(`{}`), Result: json.RawMessage(`{}`)})
	}
	dir := filepath.Join(t.TempDir(), "bundle")
	if err := evidence.Write(dir, b, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestConformCloudRefusesWithoutCredentials(t *testing.T) {
	t.Setenv(sandbox.EnvAPIKey, "")
	state := t.TempDir()
	_, err := run(t, "conform", "--cloud", "--state-dir", state)
	if err == nil || !strings.Contains(err.Error(), sandbox.EnvAPIKey) {
		t.Fatalf("conform --cloud without credentials: %v, want a refusal naming %s", err, sandbox.EnvAPIKey)
	}
	if entries, _ := os.ReadDir(state); len(entries) != 0 {
		t.Errorf("a refused run left state files: %v", entries)
	}
	t.Setenv(sandbox.EnvAPIKey, "e2b_"+strings.Repeat("ab", 20))
	if _, err := run(t, "conform", "--cloud", "--fake-api-key", "e2b_1234", "--state-dir", state); err == nil {
		t.Error("--cloud with --fake-api-key must be refused")
	}
}

func TestEvidenceVerifyAndRender(t *testing.T) {
	loop := bundle(t, evidence.ModeLoopback, "in-process")
	out, err := run(t, "evidence", "verify", loop)
	if err != nil || !strings.Contains(out, "verified: loopback evidence") {
		t.Fatalf("verify a loopback bundle: %v\n%s", err, out)
	}
	out, err = run(t, "evidence", "verify", "--cloud", loop)
	var code exitCodeError
	if !errors.As(err, &code) || code != 1 || !strings.Contains(out, "never verifies as cloud evidence") {
		t.Errorf("verify --cloud of loopback evidence: %v\n%s", err, out)
	}
	cloud := bundle(t, evidence.ModeCloud, "api.e2b.app")
	if out, err := run(t, "evidence", "verify", "--cloud", cloud); err != nil || !strings.Contains(out, "cloud evidence from api.e2b.app") {
		t.Errorf("verify --cloud of cloud evidence: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(cloud, evidence.FileServerLog), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, "evidence", "verify", cloud)
	if err == nil || !strings.Contains(out, "server.log: SHA-256 does not match") {
		t.Errorf("verify a tampered bundle: %v\n%s", err, out)
	}

	// Without --output the page goes to the run's folder in the user's
	// cache, never beside the bundle (a committed record's folder).
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	out, err = run(t, "evidence", "render", loop)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(cache, "sandboxkit", "runs", "cli-test", "evidence.html")
	page, err := os.ReadFile(want)
	if err != nil || !strings.Contains(string(page), "<table>") || strings.TrimSpace(out) != want {
		t.Errorf("render wrote %q (%v); output %q", want, err, out)
	}
	if _, err := os.Stat(loop + ".html"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("render wrote beside the bundle: %v", err)
	}
	given := filepath.Join(t.TempDir(), "page.html")
	if out, err := run(t, "evidence", "render", loop, "-o", given); err != nil || strings.TrimSpace(out) != given {
		t.Errorf("render -o %s: %v, output %q", given, err, out)
	}
	if _, err := run(t, "evidence", "render", loop, "-o", filepath.Join(loop, "page.html")); err == nil {
		t.Error("render into the bundle must be refused")
	}
	if err := evidence.Verify(loop, nil); err != nil {
		t.Errorf("render changed the bundle: %v", err)
	}
}

func TestSweepCommand(t *testing.T) {
	if _, err := run(t, "sweep"); err == nil || !strings.Contains(err.Error(), "--run") {
		t.Errorf("sweep without --run: %v", err)
	}
	state := t.TempDir()
	out, err := run(t, "sweep", "--list", "--state-dir", state)
	if err != nil || !strings.HasPrefix(out, "RUN") {
		t.Errorf("sweep --list of an empty state dir: %v\n%s", err, out)
	}
	if _, err := run(t, "sweep", "--run", "nope", "--state-dir", state); err == nil || !strings.Contains(err.Error(), "no state file") {
		t.Errorf("sweep of an unknown run: %v", err)
	}
}
