//go:build linux

package nsexec

import (
	"context"
	"os"
	"testing"

	"github.com/sandboxkit/sandboxkit/internal/fakeenvd"
)

func TestProbe(t *testing.T) {
	if err := Probe(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
}

// startSandbox starts a sandbox that the test closes.
func startSandbox(t testing.TB) *Sandbox {
	t.Helper()
	s, err := Start(Options{}, fakeenvd.Config{SandboxID: "sbx-test", TemplateID: "tpl"})
	if err != nil {
		t.Skipf("namespace sandboxes unavailable here: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestSandboxEnvironment(t *testing.T) {
	s := startSandbox(t)
	cases := []struct{ name, script, want string }{
		{"default user", "id -un; id -u; echo $HOME; pwd", "user\n1000\n/home/user\n/home/user\n"},
		{"hostname", "hostname", fakeenvd.Hostname + "\n"},
		{"sandbox identity", "cat /run/e2b/.E2B_SANDBOX_ID; echo; echo $E2B_SANDBOX_ID $E2B_TEMPLATE_ID", "sbx-test\nsbx-test tpl\n"},
		{"own pid namespace", "echo $(( $$ < 100 )); cat /proc/1/comm", "1\nexe\n"},
		{"host dirs masked", "stat -f -c %T /root /home /tmp; ls -A /home; ls -A /tmp | wc -l", "tmpfs\ntmpfs\ntmpfs\nuser\n0\n"},
		{"loopback only", "ls /sys/class/net 2>/dev/null || cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '", "lo\n"},
		{"no CAP_SYS_ADMIN in the bounding set", "grep CapBnd /proc/self/status", "CapBnd:\t00000000a00405fb\n"},
		{"minimal /dev", "ls /dev | tr '\\n' ' '", "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero "},
		{"writes stay in the sandbox", "echo hi > /home/user/f && cat /home/user/f", "hi\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := s.run(context.Background(), "/bin/bash", "-c", c.script)
			if err != nil {
				t.Fatal(err)
			}
			if res.stdout != c.want {
				t.Errorf("stdout %q, want %q (stderr %q, code %d)", res.stdout, c.want, res.stderr, res.code)
			}
		})
	}
}

// TestBootIDPerSandbox checks each sandbox has a boot_id of its own.
func TestBootIDPerSandbox(t *testing.T) {
	a, b := startSandbox(t), startSandbox(t)
	host, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{string(host): true}
	for _, s := range []*Sandbox{a, b} {
		res, err := s.run(context.Background(), "cat", "/proc/sys/kernel/random/boot_id")
		if err != nil || res.code != 0 {
			t.Fatalf("cat boot_id: %v %+v", err, res)
		}
		if seen[res.stdout] {
			t.Errorf("boot_id %q is not the sandbox's own", res.stdout)
		}
		seen[res.stdout] = true
	}
}
