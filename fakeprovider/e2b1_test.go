package fakeprovider_test

import (
	"os"
	"strings"
	"testing"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// TestReachE2B1Preload checks that the preload path writes the embedded
// preload and gives the NODE_OPTIONS that loads it, and that Close removes it.
func TestReachE2B1Preload(t *testing.T) {
	p := fakeprovider.New(nil)
	t.Cleanup(p.Close)
	r, err := fakeprovider.ReachE2B1(fakeprovider.E2B1Preload, p, fakeprovider.DebugAddrs{}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Env) != 1 || !strings.HasPrefix(r.Env[0], "NODE_OPTIONS=--require=") {
		t.Fatalf("Env = %v", r.Env)
	}
	path := strings.TrimPrefix(r.Env[0], "NODE_OPTIONS=--require=")
	b, err := os.ReadFile(path)
	if err != nil || string(b) != fakeprovider.NodeFetchPreload || !strings.Contains(string(b), "E2b-Sandbox-Id") {
		t.Fatalf("preload file %s: %v", path, err)
	}
	if !strings.Contains(r.Console, "preload") {
		t.Fatalf("Console does not name the path: %q", r.Console)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the preload outlived Close: %v", err)
	}
}

// TestReachE2B1Debug checks the debug path's environment and console.
func TestReachE2B1Debug(t *testing.T) {
	p := fakeprovider.New(nil)
	t.Cleanup(p.Close)
	r, err := fakeprovider.ReachE2B1(fakeprovider.E2B1Debug, p, fakeprovider.DebugAddrs{API: "127.0.0.1:0", Envd: "127.0.0.1:0", CodeInterpreter: "127.0.0.1:0"}, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	if len(r.Env) != 1 || r.Env[0] != "E2B_DEBUG=true" || !strings.Contains(r.Console, "debug endpoints") {
		t.Fatalf("Env %v, Console %q", r.Env, r.Console)
	}
	for _, s := range []string{"", "debug", "preload"} {
		if _, err := fakeprovider.ParseE2B1Path(s); err != nil {
			t.Errorf("ParseE2B1Path(%q): %v", s, err)
		}
	}
	if _, err := fakeprovider.ParseE2B1Path("fetch"); err == nil {
		t.Error(`ParseE2B1Path("fetch") accepted`)
	}
}
