package conformance

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const fixtureEnv = "SANDBOXKIT_FIXTURE_RUN"

// fixtureFilter keeps the fixture runs short: the families where the
// explicit-ID design and the text results show.
// exec.timeout-is-tool-error waits 10 s for a timeout the fixture ignores.
const fixtureFilter = "(protocol || default || exec || files) && !exec.timeout-is-tool-error"

// TestExplicitIDFixture runs the kit, with a tool map and profile
// explicit-ids, against the explicit-ID camelCase fixture with text
// results (internal/fixtures/explicitids), each run in a child process
// (Ginkgo runs one suite per process), and checks what the kit reports:
// TOOLS-3 once for the run, the default specs not applicable, and an
// expected-failures file that makes the run pass and names an entry that
// now passes.
func TestExplicitIDFixture(t *testing.T) {
	if os.Getenv(fixtureEnv) != "" {
		t.Skip("inside a child run")
	}
	if testing.Short() {
		t.Skip("builds and runs a fixture server")
	}
	bin := buildFixtures(t, "./internal/fixtures/explicitids")["explicitids"]
	run := func(baseline string) (string, bool) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestExplicitIDFixtureChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), fixtureEnv+"="+bin, "SANDBOXKIT_FIXTURE_BASELINE="+baseline)
		out, err := cmd.CombinedOutput()
		return string(out), err == nil
	}

	out, ok := run("")
	if ok {
		t.Fatalf("the fixture has real gaps, but the run passed\n%s", tail([]byte(out)))
	}
	if n := strings.Count(out, "FINDING TOOLS-3"); n != 1 {
		t.Errorf("TOOLS-3 reported %d times, want once for the run\n%s", n, tail([]byte(out)))
	}
	if strings.Contains(out, "FAIL default.") || strings.Contains(out, "results has no structuredContent") {
		t.Errorf("a default spec or a missing structuredContent failed a spec of its own\n%s", tail([]byte(out)))
	}
	if !regexp.MustCompile(`N/A [a-z., -]*default\.create-sets-default[a-z., -]*: not applicable under profile explicit-ids`).MatchString(out) {
		t.Errorf("the default specs are not reported not applicable\n%s", tail([]byte(out)))
	}
	for _, spec := range []string{"exec.run-command-streams", "files.read-round-trip"} {
		if strings.Contains(out, "FAIL "+spec+" ") {
			t.Errorf("%s fails against a server that does it, through the tool map\n%s", spec, tail([]byte(out)))
		}
	}
	failed := regexp.MustCompile(`(?m)^\s+FAIL ([a-z]+\.[a-z0-9-]+) `).FindAllStringSubmatch(out, -1)
	if len(failed) == 0 {
		t.Fatalf("no spec failed: the baseline below would be empty\n%s", tail([]byte(out)))
	}

	// A baseline of exactly those failures and the finding passes.
	var b strings.Builder
	b.WriteString("TOOLS-3: the fixture answers with JSON text blocks\n")
	for _, m := range failed {
		b.WriteString(m[1] + ": a known gap of the fixture\n")
	}
	baseline := filepath.Join(t.TempDir(), "baseline.yaml")
	if err := os.WriteFile(baseline, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, ok := run(baseline); !ok || !strings.Contains(out, "baseline: PASS") {
		t.Errorf("the run with a baseline of its failures did not pass\n%s", tail([]byte(out)))
	}

	// An entry that now passes fails the run and is named.
	b.WriteString("exec.run-command-streams: fixed since\n")
	if err := os.WriteFile(baseline, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, ok := run(baseline); ok || !strings.Contains(out, "NOW PASSES exec.run-command-streams") {
		t.Errorf("a baseline entry that passes must be named and fail the run (passed %v)\n%s", ok, tail([]byte(out)))
	}
}

// TestExplicitIDFixtureChild is one run of TestExplicitIDFixture.
func TestExplicitIDFixtureChild(t *testing.T) {
	bin := os.Getenv(fixtureEnv)
	if bin == "" {
		t.Skip("run by TestExplicitIDFixture")
	}
	data, err := os.ReadFile("testdata/explicitids-toolmap.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg := NewConfig()
	cfg.ServerCommand = []string{bin}
	cfg.Profile = ProfileExplicitIDs
	if cfg.Tools, err = ParseToolMap(data); err != nil {
		t.Fatal(err)
	}
	if path := os.Getenv("SANDBOXKIT_FIXTURE_BASELINE"); path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.ExpectedFailures, err = ParseExpectedFailures(data); err != nil {
			t.Fatal(err)
		}
	}
	RunWith(t, cfg, &RunOptions{LabelFilter: fixtureFilter})
}
