package compat_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// officialSuite is one pinned version of the official MCP conformance suite
// (@modelcontextprotocol/conformance), installed under an npm alias by
// package.json, and the server scenarios it runs at one specification
// version.
type officialSuite struct {
	alias       string   // the folder under node_modules
	specVersion string   // --spec-version
	scenarios   []string // --scenario, one run each
	// expectedFailures is a baseline file in this folder, or "": each entry
	// quotes the specification text that makes the check not apply.
	expectedFailures string
	extraArgs        []string // further flags this version of the suite takes
}

// officialSuites are the suites CI runs against `sandboxkit serve --fake
// --http`, one server serving both eras on one endpoint.
var officialSuites = []officialSuite{
	{
		// The 2026-07-28 server scenarios (stateless MCP).
		alias:       "mcp-conformance-2026",
		specVersion: "2026-07-28",
		scenarios: []string{"server-stateless", "caching", "http-header-validation",
			"http-custom-header-server-validation", "tools-list", "dns-rebinding-protection"},
		expectedFailures: filepath.Join("suite", "expected-failures-2026-07-28.yml"),
		// A bound on a hung scenario, not a latency margin: the suite's 30 s
		// default is tight on a loaded CI machine (0.1.16 has no such flag).
		extraArgs: []string{"--timeout", "180000"},
	},
	{
		// 0.1.16's generic 2025 server scenarios. Its other scenarios call the
		// suite's own fixture tools, resources and prompts (test_simple_text,
		// test_image_content, ...) that only its "everything server" has.
		alias:       "mcp-conformance-2025",
		specVersion: "2025-11-25",
		scenarios: []string{"server-initialize", "logging-set-level", "ping", "tools-list",
			"server-sse-multiple-streams", "resources-list", "prompts-list", "dns-rebinding-protection"},
	},
}

// TestOfficialConformanceSuite runs the official MCP conformance suite's
// server scenarios against the reference server over Streamable HTTP (the
// suite has no stdio server mode). A scenario fails the test when the suite
// exits non-zero: an unexpected failed check, or a baseline entry that now
// passes. It logs each scenario's passed/scored check counts; SANDBOXKIT_BIN
// names a prebuilt binary to run instead of building cmd/sandboxkit.
func TestOfficialConformanceSuite(t *testing.T) {
	node, why := findNode()
	if node == "" {
		skipOrFail(t, why)
	}
	for _, s := range officialSuites {
		if _, err := os.Stat(suiteEntry(s.alias)); err != nil {
			skipOrFail(t, fmt.Sprintf("compat/node_modules/%s is not installed", s.alias))
		}
	}
	bin := os.Getenv("SANDBOXKIT_BIN") // a binary you built, e.g. of another commit, to compare
	if bin == "" {
		bin = buildSandboxkit(t)
	}
	url := startServeHTTP(t, bin)
	for _, s := range officialSuites {
		t.Run(s.specVersion, func(t *testing.T) {
			for _, scenario := range s.scenarios {
				t.Run(scenario, func(t *testing.T) { runScenario(t, node, url, s, scenario) })
			}
		})
	}
}

func suiteEntry(alias string) string {
	return filepath.Join("node_modules", alias, "dist", "index.js")
}

// runScenario runs one scenario and reports its checks from checks.json.
func runScenario(t *testing.T, node, url string, s officialSuite, scenario string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	outDir := t.TempDir()
	args := []string{suiteEntry(s.alias), "server", "--url", url,
		"--spec-version", s.specVersion, "--scenario", scenario, "-o", outDir}
	if s.expectedFailures != "" {
		args = append(args, "--expected-failures", s.expectedFailures)
	}
	args = append(args, s.extraArgs...)
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "NO_COLOR=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	passed, total, failed := countChecks(t, outDir)
	t.Logf("%s %s: %d/%d checks passed; failed: %v", s.alias, scenario, passed, total, failed)
	if err != nil {
		t.Fatalf("%s server --scenario %s --spec-version %s: %v\n%s", s.alias, scenario, s.specVersion, err, out.String())
	}
	if total == 0 {
		t.Fatalf("%s %s ran no check:\n%s", s.alias, scenario, out.String())
	}
}

// suiteCheck is one entry of the suite's checks.json.
type suiteCheck struct {
	ID     string `json:"id"`
	Status string `json:"status"` // SUCCESS, FAILURE, WARNING, INFO, SKIPPED
}

// countChecks reads every checks.json the suite wrote under dir and counts
// the checks that passed out of those that were scored (SUCCESS or FAILURE).
func countChecks(t *testing.T, dir string) (passed, total int, failed []string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	if err != nil {
		t.Fatalf("glob checks.json: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("read %s: %v", f, err)
		}
		var checks []suiteCheck
		if err := json.Unmarshal(data, &checks); err != nil {
			t.Fatalf("parse %s: %v", f, err)
		}
		for _, c := range checks {
			switch c.Status {
			case "SUCCESS":
				passed++
				total++
			case "FAILURE":
				total++
				failed = append(failed, c.ID)
			}
		}
	}
	return passed, total, failed
}

var servingRE = regexp.MustCompile(`msg="serving MCP over Streamable HTTP" addr=(\S+)`)

// startServeHTTP starts `sandboxkit serve --fake --http 127.0.0.1:0`, waits
// for the address it logs, and stops it when the test ends.
func startServeHTTP(t *testing.T, bin string) string {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--fake", "--http", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatalf("stderr pipe: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start serve --http: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	addr := make(chan string, 1)
	var logged strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := servingRE.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
				_, _ = io.Copy(io.Discard, stderr) // keep draining so the server never blocks on its log
				return
			}
			logged.WriteString(sc.Text() + "\n")
		}
		close(addr)
	}()
	a, ok := <-addr
	if !ok {
		t.Fatalf("serve --http exited before it logged its address:\n%s", logged.String())
	}
	return "http://" + a + "/mcp"
}
