package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/conformance"
	"github.com/sandboxkit/sandboxkit/conformance/cloudstate"
	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
	"github.com/sandboxkit/sandboxkit/server"
)

// TestSweepCommandAgainstLoopbackFake sweeps the state file of an
// interrupted run against the fake provider on loopback: it destroys the
// run's leftovers, counts one already gone, leaves alone one the server
// claimed that started before the run, and never touches a sandbox the
// state file does not name.
func TestSweepCommandAgainstLoopbackFake(t *testing.T) {
	p := fakeprovider.New(nil)
	srv := p.Start(t)
	t.Setenv(sandbox.EnvAPIURL, srv.URL())
	t.Setenv(sandbox.EnvAPIKey, p.APIKey())
	t.Setenv(sandbox.EnvDomain, fakeprovider.DomainSuffix)
	t.Setenv(sandbox.EnvSandboxURL, srv.URL())

	foreign := p.AddSandbox(fakeprovider.SandboxSeed{})
	left := p.AddSandbox(fakeprovider.SandboxSeed{})
	ext := p.AddSandbox(fakeprovider.SandboxSeed{})
	claimed := p.AddSandbox(fakeprovider.SandboxSeed{StartedAt: time.Now().Add(-time.Hour), EndAt: time.Now().Add(time.Hour)})
	const gone = "sbxgone000000000000000"

	host := strings.TrimPrefix(srv.URL(), "http://")
	rec := cloudstate.RunRecord{
		Format: 1, RunID: "cli-interrupted", KitVersion: conformance.Version, ProviderID: sandbox.DefaultProviderID,
		APIHost: host, Host: "elsewhere", PID: 0, StartedAt: time.Now().UTC(),
		Sandboxes: []cloudstate.TrackedSandbox{
			{ID: left, Source: cloudstate.SourceCreate, State: cloudstate.SandboxAlive},
			{ID: ext, Source: cloudstate.SourceKit, State: cloudstate.SandboxAlive},
			{ID: gone, Source: cloudstate.SourceImplicit, State: cloudstate.SandboxAlive},
			{ID: claimed, Source: cloudstate.SourceImplicit, State: cloudstate.SandboxAlive},
		},
	}
	state := t.TempDir()
	data, _ := json.Marshal(rec)
	if err := os.WriteFile(filepath.Join(state, rec.RunID+".json"), data, 0o600); err != nil {
		t.Fatal(err)
	}

	out, err := run(t, "sweep", "--list", "--state-dir", state)
	if err != nil || !strings.Contains(out, "cli-interrupted") || !strings.Contains(out, "interrupted or running") {
		t.Errorf("sweep --list: %v\n%s", err, out)
	}
	out, err = run(t, "sweep", "--run", rec.RunID, "--state-dir", state)
	if err != nil {
		t.Fatalf("sweep --run: %v\n%s", err, out)
	}
	for _, want := range []string{"destroyed " + left, "destroyed " + ext, "already gone " + gone, "left alone " + claimed,
		"2 destroyed, 1 already gone, 0 failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("sweep output lacks %q:\n%s", want, out)
		}
	}
	var live []string
	for _, r := range p.LiveSandboxes() {
		live = append(live, r.ID)
	}
	want := []string{foreign, claimed}
	slices.Sort(live)
	slices.Sort(want)
	if !slices.Equal(live, want) {
		t.Errorf("live after the sweep: %v, want %v (the foreign and the claimed sandboxes)", live, want)
	}
	after, err := cloudstate.ReadRun(state, rec.RunID)
	if err != nil || after.Alive() != 0 {
		t.Errorf("state file after the sweep: %+v, %v", after, err)
	}
	if out, err := run(t, "sweep", "--run", rec.RunID, "--state-dir", state); err != nil || !strings.Contains(out, "0 destroyed, 0 already gone, 0 failed") {
		t.Errorf("a second sweep: %v\n%s", err, out)
	}
}

// TestConformCloudChecksTheEvidenceDirFirst: a cloud run whose bundle
// could not be written is refused before it creates anything.
func TestConformCloudChecksTheEvidenceDirFirst(t *testing.T) {
	t.Setenv(sandbox.EnvAPIKey, "e2b_"+strings.Repeat("cd", 20))
	t.Setenv(sandbox.EnvAPIURL, "http://127.0.0.1:1") // never a real provider, should the check fail
	busy := t.TempDir()
	if err := os.WriteFile(filepath.Join(busy, "old.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	out, err := run(t, "conform", "--cloud", "--evidence-dir", busy, "--state-dir", state)
	if err == nil || !strings.Contains(out, "not started") || !strings.Contains(out, "not empty") {
		t.Fatalf("conform --cloud into a non-empty evidence directory: %v\n%s", err, out)
	}
	if entries, _ := os.ReadDir(state); len(entries) != 0 {
		t.Errorf("the refused run left state files: %v", entries)
	}
}

// TestSweepOrphansCommand: "sweep --orphans" destroys exactly the sandboxes
// tagged with the instance (from the flag or $SANDBOXKIT_INSTANCE), and a
// dry run destroys nothing.
func TestSweepOrphansCommand(t *testing.T) {
	p := fakeprovider.New(nil)
	srv := p.Start(t)
	t.Setenv(sandbox.EnvAPIURL, srv.URL())
	t.Setenv(sandbox.EnvAPIKey, p.APIKey())
	t.Setenv(sandbox.EnvDomain, fakeprovider.DomainSuffix)
	t.Setenv(sandbox.EnvSandboxURL, srv.URL())
	t.Setenv(serveInstanceEnv, "")

	dead := p.AddSandbox(fakeprovider.SandboxSeed{Metadata: map[string]string{server.InstanceTagKey: "web-1"}})
	live := p.AddSandbox(fakeprovider.SandboxSeed{Metadata: map[string]string{server.InstanceTagKey: "web-2"}})
	untagged := p.AddSandbox(fakeprovider.SandboxSeed{})

	if out, err := run(t, "sweep", "--orphans"); err == nil {
		t.Errorf("sweep --orphans without an instance succeeded:\n%s", out)
	}
	out, err := run(t, "sweep", "--orphans", "--instance", "web-1", "--dry-run")
	if err != nil || !strings.Contains(out, "would destroy "+dead) {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if p.LiveCount() != 3 {
		t.Fatalf("a dry run destroyed something: %d live", p.LiveCount())
	}
	t.Setenv(serveInstanceEnv, "web-1")
	out, err = run(t, "sweep", "--orphans")
	if err != nil || !strings.Contains(out, "destroyed "+dead) || !strings.Contains(out, "1 destroyed") {
		t.Fatalf("sweep --orphans: %v\n%s", err, out)
	}
	if _, ok := p.Sandbox(dead); ok {
		t.Error("the dead instance's sandbox survived")
	}
	for _, id := range []string{live, untagged} {
		if _, ok := p.Sandbox(id); !ok {
			t.Errorf("sandbox %s (not web-1's) was destroyed", id)
		}
	}
}
