package conformance

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const fixtureEnv = "SANDBOXKIT_FIXTURE_RUN"

// fixtureFilter keeps the fixture runs short: the families where the
// explicit-ID design and the text results show.
// exec.timeout-is-tool-error waits 10 s for a timeout the fixture ignores.
// era-legacy: the fixture's SDK also answers 2026-07-28, and what these
// tests read is the explicit-ID profile in 2025 sessions.
const fixtureFilter = "(protocol || default || exec || files) && !exec.timeout-is-tool-error && era-legacy"

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
	bin := buildFixture(t, "./internal/fixtures/explicitids")
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
	if !regexp.MustCompile(`FAIL exec\.cwd-and-envs \[[A-Z0-9 -]*\] run_command defines no cwd, envs argument, which EXEC-1 gives it`).MatchString(out) {
		t.Errorf("exec.cwd-and-envs does not say that run_command lacks cwd and envs\n%s", tail([]byte(out)))
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
	filter := fixtureFilter
	if f := os.Getenv("SANDBOXKIT_FIXTURE_FILTER"); f != "" {
		filter = f
	}
	RunWith(t, cfg, &RunOptions{LabelFilter: filter})
}

// explicitIDTrueDefects are the specs of explicitIDDefectFilter the
// fixture fails, each for a defect it has under profile explicit-ids:
//   - VAL-4: undefined arguments are accepted (bounds.*, delegation.create-no-team,
//     leakage.validation-no-echo), and FILE-1's content is not required;
//   - VAL-6: the SDK's invalid_argument for an unconfigured provider prefix is
//     passed on without its field (bounds.kill-sandbox and the others' sandbox_id case);
//   - ERR-2: tool errors carry no http_status (errors.create-rejected's
//     template).
//
// The session renewal specs (RENEW-1) and errors.kill-gone (SESSION-3) are
// not applicable: a server of profile explicit-ids is judged by leases
// (section 13), so no session renewal is demanded of it.
var explicitIDTrueDefects = []string{
	"bounds.create-sandbox", "bounds.kill-sandbox", "bounds.read-file", "bounds.run-command",
	"bounds.set-sandbox-timeout", "bounds.write-file",
	"errors.create-rejected",
	"leakage.validation-no-echo",
}

// explicitIDDefectFilter are the families where the kit's false failures
// of the fixture were: the kit's probe sandbox, a sandbox killed by ID,
// arguments the tool does not define, results in milliseconds.
const explicitIDDefectFilter = "(bounds || leakage || renewal || errors.create-rejected || errors.kill-gone) && era-legacy"

// TestExplicitIDFixtureTrueFailures runs those families against the
// explicit-ID fixture: exactly its defects fail. leakage.faults (the kit
// named a sandbox it had killed), renewal.set-timeout-result (timeoutMs
// 120000 is 120 s) and bounds.run-command's "missing command" (the kit's
// own create was counted against it) were false failures.
func TestExplicitIDFixtureTrueFailures(t *testing.T) {
	if os.Getenv(fixtureEnv) != "" {
		t.Skip("inside a child run")
	}
	if testing.Short() {
		t.Skip("builds and runs a fixture server")
	}
	bin := buildFixture(t, "./internal/fixtures/explicitids")
	cmd := exec.Command(os.Args[0], "-test.run=^TestExplicitIDFixtureChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), fixtureEnv+"="+bin, "SANDBOXKIT_FIXTURE_FILTER="+explicitIDDefectFilter)
	data, _ := cmd.CombinedOutput()
	out := string(data)
	sum := summaryOf(out)
	if got := failedSpecs(sum); !slices.Equal(got, explicitIDTrueDefects) {
		t.Errorf("failed specs %v\nwant exactly the fixture's defects %v\n%s", got, explicitIDTrueDefects, sum)
	}
	if strings.Contains(sum, "(POST /sandboxes) for a rejected call") || strings.Contains(sum, "(POST /sandboxes, ") {
		t.Errorf("the kit's own create_sandbox was counted against a rejected call:\n%s", sum)
	}
}
