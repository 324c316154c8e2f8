package fakeenvd

import (
	"strings"
	"testing"
)

// TestShellPermissions checks that commands running as the default user
// meet the kernel's permission checks (mode, owner, group), and root none.
func TestShellPermissions(t *testing.T) {
	d := newDaemon(t, Config{})
	cases := []struct{ script, stdout, stderr string }{
		{`echo hi > /root/x; echo "$?"`, "1\n", "bash: /root/x: Permission denied"},
		{`ls /root; echo "$?"`, "2\n", "ls: cannot open directory '/root': Permission denied"},
		{`mkdir /etc/new; echo "$?"`, "1\n", "mkdir: cannot create directory '/etc/new': Permission denied"},
		{`rm /etc/hostname; echo "$?"`, "1\n", "rm: cannot remove '/etc/hostname': Permission denied"},
		{`mv /etc/hostname /tmp/h; echo "$?"`, "1\n", "Permission denied"},
		{`echo a > /tmp/own; chmod 000 /tmp/own; cat /tmp/own; echo "$?"; chmod 644 /tmp/own; cat /tmp/own`, "1\na\n", "cat: /tmp/own: Permission denied"},
		{`cat /etc/passwd > /dev/null && echo readable; test -w /etc || echo not-writable`, "readable\nnot-writable\n", ""},
		{`echo mine > ~/f && cat ~/f && ls -l ~/f | cut -d' ' -f3,4`, "mine\nuser user\n", ""},
	}
	for _, c := range cases {
		r := run(t, d, c.script)
		if r.stdout != c.stdout || !strings.Contains(strings.ToLower(r.stderr), strings.ToLower(c.stderr)) {
			t.Errorf("%s\n got stdout %q stderr %q\nwant stdout %q stderr containing %q", c.script, r.stdout, r.stderr, c.stdout, c.stderr)
		}
	}
	// The sticky /tmp: another user's file cannot be removed.
	root, _ := d.account("root")
	_, sub, err := d.startProcess(root, bashReq("echo r > /tmp/roots; echo hi > /root/x; cat /root/x"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if r := collect(t, sub); r.stdout != "hi\n" || r.code() != 0 {
		t.Fatalf("root: %q %q", r.stdout, r.stderr)
	}
	if r := run(t, d, `chmod 666 /tmp/roots; rm -f /tmp/roots; echo "$?"`); r.stdout != "1\n" {
		t.Errorf("sticky /tmp: %q %q", r.stdout, r.stderr)
	}
}

// TestDaemonFileOpsRunAsRoot checks that the file RPCs and /files are not
// limited by the user's permissions: envd runs as root and only chowns
// what it creates to the user (infra packages/envd/internal/api/upload.go
// processFile, permissions.EnsureDirs).
func TestDaemonFileOpsRunAsRoot(t *testing.T) {
	d := newDaemon(t, Config{})
	if err := d.FS().WriteFile("/root/by-envd", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := d.FS().ReadDir("/root"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.FS().As(1000, 1000).ReadDir("/root"); err == nil {
		t.Fatal("the user's view lists /root")
	}
}
