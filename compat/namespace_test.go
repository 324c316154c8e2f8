package compat_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// execEnv names the fake provider's --exec mode for the scripts
// (lib/sandboxkit.mjs fakeExecArgs, python/conftest.py start_fake).
const execEnv = "SANDBOXKIT_COMPAT_EXEC"

// notInNamespace lists the e2b/ scripts the namespace run leaves out, each
// with the reason (a difference listed in fakeprovider/doc.go, "Backends").
// None today: the code interpreter runs real kernels in namespace mode too.
var notInNamespace = map[string]string{}

// TestOfficialClientsNamespace runs compat/e2b's scripts (the official E2B
// JS SDK against fake-provider) with every sandbox a real Linux one:
// `fake-provider --exec namespace`. It needs root and a start-up probe
// that passes (CI runs as root); otherwise it skips with the reason.
func TestOfficialClientsNamespace(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("e2b", "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no E2B compatibility scripts found (glob e2b/*.test.mjs): %v", err)
	}
	node, why := findNode()
	if node == "" {
		skipOrFail(t, fmt.Sprintf("%s: %d official-client checks not run in namespace mode", why, len(files)))
	}
	bin := namespaceBin(t)
	for _, file := range files {
		name := strings.TrimSuffix(filepath.ToSlash(file), ".test.mjs")
		t.Run(name, func(t *testing.T) {
			if why, ok := notInNamespace[file]; ok {
				t.Skip(why)
			}
			t.Parallel()
			runNodeTest(t, node, bin, file, execEnv+"=namespace")
		})
	}
}

// namespaceBin builds cmd/sandboxkit and returns it when its namespace
// sandboxes start here; otherwise it skips the test with the reason.
func namespaceBin(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("fake-provider --exec namespace needs root (CAP_SYS_ADMIN) to create namespaces; CI runs as root")
	}
	bin := buildSandboxkit(t)
	if err := probeNamespace(bin); err != nil {
		t.Skipf("fake-provider --exec namespace does not start here: %v", err)
	}
	return bin
}

// probeNamespace starts `fake-provider --exec namespace` once: its own
// start-up probe (one sandbox running `true`) passes when it prints its
// environment, and otherwise it exits with the reason on stderr.
func probeNamespace(bin string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "fake-provider", "--exec", "namespace", "--addr", "127.0.0.1:0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "E2B_API_URL=") {
			return nil
		}
	}
	_ = cmd.Wait()
	return fmt.Errorf("%s", strings.TrimSpace(stderr.String()))
}

// TestPythonSDKNamespace runs compat/python (the official E2B Python SDK
// against fake-provider) with every sandbox a real Linux one, where
// TestPythonSDK would run and [namespaceBin] allows.
func TestPythonSDKNamespace(t *testing.T) {
	site, why := findPythonSite()
	if site == "" {
		t.Skip(why + "; the Python SDK checks in namespace mode need the SDK as TestPythonSDK does")
	}
	python, why := findPython()
	if python == "" {
		pythonSkipOrFail(t, why)
	}
	runPytest(t, python, site, namespaceBin(t), execEnv+"=namespace")
}
