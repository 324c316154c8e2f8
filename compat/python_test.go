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
	"testing"
	"time"
)

// pythonSiteEnv names a folder holding the E2B Python SDK and its
// dependencies (the layout of ../shared/python-e2b/site-packages); when it is
// unset the test looks for shared/python-e2b/site-packages beside the clone
// or any folder above it.
const pythonSiteEnv = "SANDBOXKIT_PYTHON_E2B"

// minPython is the oldest Python the E2B Python SDK 2.34.0 supports.
var minPython = [2]int{3, 10}

// TestPythonSDK runs compat/python/: pytest checks that drive the official
// E2B Python SDK (e2b 2.34.0, sync and async) against `sandboxkit
// fake-provider` on loopback. Without Python or the SDK it skips and says
// how to run them. With SANDBOXKIT_COMPAT_REQUIRED set (.ci/run) it fails
// instead when the SDK is there and Python is not; the SDK's site-packages
// are not part of the repository (no Python package index is reachable),
// so a clone with no shared/ folder above it skips, and .ci/run lists the
// skip with its reason.
func TestPythonSDK(t *testing.T) {
	site, why := findPythonSite()
	if site == "" {
		t.Skip(why + "; to run the Python SDK checks: put the E2B Python SDK's site-packages at ../shared/python-e2b/site-packages or name it in " + pythonSiteEnv)
	}
	python, why := findPython()
	if python == "" {
		pythonSkipOrFail(t, why)
	}
	runPytest(t, python, site, buildSandboxkit(t))
}

// runPytest runs compat/python with python, the SDK's site-packages and
// the sandboxkit binary bin; env adds KEY=value entries.
func runPytest(t *testing.T, python, site, bin string, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-m", "pytest", "-q", "-rA", "python")
	cmd.Env = append(os.Environ(),
		"SANDBOXKIT_BIN="+bin,
		"PYTHONPATH="+site,
		// protobuf's own switch: its C++ backend needs a system library the
		// shipped site-packages do not carry.
		"PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python",
		"PYTHONDONTWRITEBYTECODE=1",
		"HOME="+t.TempDir(),
		"NO_COLOR=1",
	)
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("python -m pytest compat/python:\n%s", out.String())
	if err != nil {
		t.Fatalf("the Python SDK checks failed: %v (output above)", err)
	}
}

func pythonSkipOrFail(t *testing.T, why string) {
	t.Helper()
	msg := why + "; to run the Python SDK checks: put the E2B Python SDK's site-packages at ../shared/python-e2b/site-packages (or name it in " +
		pythonSiteEnv + "), have python3 " + fmt.Sprintf("%d.%d", minPython[0], minPython[1]) +
		"+ on PATH, then `go test ./compat -run TestPythonSDK` (see compat/python/README.md)"
	if os.Getenv(requireEnv) != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// findPython returns a python3 new enough for the SDK, or why there is none.
func findPython() (python, why string) {
	p, err := exec.LookPath("python3")
	if err != nil {
		return "", "python3 is not on PATH"
	}
	out, err := exec.Command(p, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Sprintf("%s --version: %v", p, err)
	}
	if !pythonAtLeast(string(out), minPython) {
		return "", fmt.Sprintf("%s is %s", p, bytes.TrimSpace(out))
	}
	return p, ""
}

// findPythonSite finds the SDK's site-packages: pythonSiteEnv, else
// shared/python-e2b/site-packages in the parent of the clone or above.
func findPythonSite() (string, string) {
	if dir := os.Getenv(pythonSiteEnv); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "e2b", "__init__.py")); err != nil {
			return "", pythonSiteEnv + "=" + dir + " holds no e2b package"
		}
		return dir, ""
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err.Error()
	}
	for dir := filepath.Dir(wd); ; dir = filepath.Dir(dir) {
		site := filepath.Join(dir, "shared", "python-e2b", "site-packages")
		if _, err := os.Stat(filepath.Join(site, "e2b", "__init__.py")); err == nil {
			return site, ""
		}
		if filepath.Dir(dir) == dir {
			return "", "no shared/python-e2b/site-packages beside the clone or above it"
		}
	}
}

var pythonVersionRE = regexp.MustCompile(`Python (\d+)\.(\d+)`)

func pythonAtLeast(version string, min [2]int) bool {
	m := pythonVersionRE.FindStringSubmatch(version)
	if m == nil {
		return false
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	return major > min[0] || major == min[0] && minor >= min[1]
}
