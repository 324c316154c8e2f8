package main

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"testing"
)

// namespaceKitFamilies are the kit's families run against real sandboxes
// in CI: the ones whose tools run shell lines, where a real bash differs
// from the in-memory shell (a killed background command's subshell went
// on running on a real one, BG-3). The whole kit in namespace mode is run
// by hand: `sandboxkit conform --exec namespace` (see the README).
const namespaceKitFamilies = "exec || background"

// probeFailure is how conform reports a namespace mode that cannot start
// here (not root, no overlayfs): fakeprovider.NamespaceDaemon's probe.
var probeFailure = regexp.MustCompile(`--exec namespace: namespace sandboxes: .*`)

// The kit passes against the in-process reference server with every fake
// sandbox a real Linux one (conform --exec namespace), for the families
// above. It needs root and a start-up probe that passes (CI runs as
// root); otherwise it skips with the reason.
func TestConformNamespace(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the kit's exec and background families against real sandboxes")
	}
	if os.Geteuid() != 0 {
		t.Skip("conform --exec namespace needs root (CAP_SYS_ADMIN) to create namespaces; CI runs as root")
	}
	bin := buildCommand(t, t.TempDir())
	cmd := exec.Command(bin, "conform", "--exec", "namespace", "--label-filter", namespaceKitFamilies,
		"--details-file", t.TempDir()+"/details.log")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if m := probeFailure.Find(out.Bytes()); err != nil && m != nil {
		t.Skipf("namespace sandboxes do not start here: %s", m)
	}
	if err != nil {
		t.Fatalf("conform --exec namespace --label-filter %q: %v\n%s", namespaceKitFamilies, err, out.String())
	}
	t.Logf("conform --exec namespace --label-filter %q:\n%s", namespaceKitFamilies, out.String())
}
