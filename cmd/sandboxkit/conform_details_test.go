package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// conform's console is the kit's short report: Ginkgo's block for each
// failed spec (timeline, transcript, server log) goes to the details file
// the console names, in one process and in several; --verbose keeps it on
// the console.
func TestConformConsoleIsShort(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and runs part of the kit three times")
	}
	dir := t.TempDir()
	bin := buildCommand(t, dir)
	// run_command mapped to a name the reference server does not have,
	// with --require-all: exec.run-command-streams fails, for certain.
	toolMap := filepath.Join(dir, "map.json")
	if err := os.WriteFile(toolMap, []byte(`{"run_command": {"name": "no_such_tool"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	details := regexp.MustCompile(`(?m)^details of every spec .*: (\S+)$`)
	cache := filepath.Join(dir, "cache")
	env := append(os.Environ(), "XDG_CACHE_HOME="+cache)
	for _, procs := range []string{"1", "2"} {
		var out bytes.Buffer
		c := exec.Command(bin, "conform", "--procs", procs, "--require-all", "--tool-map", toolMap,
			"--label-filter", "exec.run-command-streams || bounds.create-sandbox")
		c.Stdout, c.Stderr, c.Env = &out, &out, env
		if err := c.Run(); err == nil {
			t.Fatalf("--procs %s: a failed spec must fail the run\n%s", procs, out.String())
		}
		console := out.String()
		if strings.Contains(console, "Timeline >>") || strings.Contains(console, "[FAILED]") {
			t.Errorf("--procs %s: Ginkgo's failure block is on the console\n%s", procs, console)
		}
		if !strings.Contains(console, "FAIL exec.run-command-streams") || !strings.Contains(console, "1 passed, 1 failed") {
			t.Errorf("--procs %s: the console lacks the kit's report of the failure\n%s", procs, console)
		}
		m := details.FindStringSubmatch(console)
		if m == nil {
			t.Fatalf("--procs %s: the console does not name the details file\n%s", procs, console)
		}
		if !strings.HasPrefix(m[1], filepath.Join(cache, "sandboxkit", "runs")+string(filepath.Separator)) {
			t.Errorf("--procs %s: details file %s is not in a run folder of the user's cache %s", procs, m[1], cache)
		}
		data, err := os.ReadFile(m[1])
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "[FAILED]") || !strings.Contains(string(data), "exec.run-command-streams") {
			t.Errorf("--procs %s: the details file lacks Ginkgo's block of the failed spec\n%s", procs, data)
		}
	}
	var out bytes.Buffer
	c := exec.Command(bin, "conform", "--procs", "1", "--verbose", "--require-all", "--tool-map", toolMap,
		"--label-filter", "exec.run-command-streams")
	c.Stdout, c.Stderr, c.Env = &out, &out, env
	_ = c.Run()
	if !strings.Contains(out.String(), "[FAILED]") {
		t.Errorf("--verbose must keep Ginkgo's output on the console\n%s", out.String())
	}
}
