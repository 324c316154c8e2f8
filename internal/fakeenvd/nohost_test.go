package fakeenvd

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func randName(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// TestNoHostWrites runs scripts that would write host paths on a real
// machine and checks that none of those paths appear on the host.
func TestNoHostWrites(t *testing.T) {
	// TMPDIR=/tmp makes "$TMPDIR/sh-interp-*" look like the interpreter's
	// own FIFO paths, which it would open on the host.
	d := newDaemon(t, Config{EnvVars: map[string]string{"TMPDIR": "/tmp"}})
	id := randName(t)
	hostPaths := []string{
		"/tmp/host-check-" + id,
		"/tmp/host-dir-" + id,
		"/tmp/host-cp-" + id,
		"/tmp/host-mv-" + id,
		"/tmp/host-tee-" + id,
		"/tmp/sh-interp-" + id,
	}
	script := strings.Join([]string{
		"echo x > /tmp/host-check-" + id,
		"mkdir /tmp/host-dir-" + id,
		"cp /etc/hostname /tmp/host-cp-" + id,
		"touch /tmp/m-" + id + " && mv /tmp/m-" + id + " /tmp/host-mv-" + id,
		"echo t | tee /tmp/host-tee-" + id + " >/dev/null",
		"echo fifo > $TMPDIR/sh-interp-" + id,
		"echo x > /tmp/sh-interp-" + id,
		"ls /tmp | grep -c " + id,
	}, "; ")
	r := run(t, d, script)
	if r.stdout != "6\n" {
		t.Errorf("stdout %q stderr %q", r.stdout, r.stderr)
	}
	for _, p := range hostPaths {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("host path %s exists or is unreadable: %v", p, err)
			os.RemoveAll(p)
		}
		if _, err := d.FS().Stat(p); err != nil {
			t.Errorf("sandbox path %s missing: %v", p, err)
		}
	}
}

// TestNoHostReads checks that host files, directories, binaries and
// environment are invisible to the shell.
func TestNoHostReads(t *testing.T) {
	t.Setenv("SANDBOXKIT_HOST_ONLY", "leak")
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(wd, "nohost_test.go")
	if _, err := os.Stat(self); err != nil {
		t.Fatalf("test file not found on the host: %v", err)
	}
	d := newDaemon(t, Config{})
	runShellCases(t, d, []shellCase{
		{name: "host file invisible to cat", script: "cat " + self, stderr: "No such file or directory", code: 1},
		{name: "host file invisible to test", script: "test -e " + self + " || [ -r " + self + " ] || echo absent", stdout: "absent\n"},
		{name: "host dir invisible to cd", script: "cd " + wd, stderr: "no such file or directory", code: 1},
		{name: "host dir invisible to glob", script: "echo " + wd + "/*.go", stdout: wd + "/*.go\n"},
		{name: "host file invisible to source", script: "source " + self, stderr: "no such file or directory", code: 1},
		{name: "no host proc or sys: /proc holds only the fake boot_id", script: "find /proc; ls /sys", stdout: "/proc\n/proc/sys\n/proc/sys/kernel\n/proc/sys/kernel/random\n/proc/sys/kernel/random/boot_id\n", stderr: "cannot access '/sys'", code: 2},
		{name: "root listing is the base image", script: "ls /", stdout: "bin\ndev\netc\nhome\nlib\nmnt\nopt\nproc\nroot\nrun\nsbin\ntmp\nusr\nvar\n"},
		{name: "sandbox hostname", script: "cat /etc/hostname", stdout: Hostname + "\n"},
		{name: "host binaries unreachable", script: "go version; git --version; perl -e 1; /usr/local/go/bin/go version; echo done",
			stdout: "done\n", stderr: "go: command not found"},
		{name: "exec runs built-ins", script: "exec echo via-exec", stdout: "via-exec\n"},
		{name: "command runs built-ins", script: "command ls -d /tmp", stdout: "/tmp\n"},
		{name: "host environment not inherited", script: "env | grep -c SANDBOXKIT_HOST_ONLY; echo ${SANDBOXKIT_HOST_ONLY:-unset}", stdout: "0\nunset\n", code: 0},
		{name: "home is the sandbox home", script: "echo $HOME; cd; pwd", stdout: "/home/user\n/home/user\n"},
	})
}

// TestNoHostProcesses samples this process's children while a busy script
// runs: the shell must never start one.
func TestNoHostProcesses(t *testing.T) {
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil || len(tasks) == 0 {
		t.Skip("/proc/self/task/*/children not available")
	}
	d := newDaemon(t, Config{})
	p, sub := start(t, d, bashReq("while true; do ls / > /dev/null; cat /etc/passwd | wc -l > /dev/null; bash -c 'true'; x=$(date); done"))
	defer sub.cancel()
	// A fixed number of samples, not a time window: a busy machine takes
	// them more slowly but never takes none.
	const samples = 60
	for range samples {
		tasks, _ := filepath.Glob("/proc/self/task/*/children")
		for _, f := range tasks {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			if pids := strings.Fields(string(b)); len(pids) > 0 {
				t.Fatalf("host child processes %v (task %s)", pids, f)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.signal(9)
	r := collect(t, sub)
	if r.end.Status != "signal: killed" {
		t.Fatalf("end %+v after %d samples", r.end, samples)
	}
}

func TestNoHostProbes(t *testing.T) {
	d := newDaemon(t, Config{})
	runShellCases(t, d, []shellCase{
		{name: "builtin type", script: "builtin type ls", stdout: "ls is /usr/bin/ls\n"},
		{name: "exec type", script: "exec type cat", stdout: "cat is /usr/bin/cat\n"},
		{name: "env command -v", script: "env command -v grep", stdout: "/usr/bin/grep\n"},
		{name: "xargs type", script: "echo sort | xargs type", stdout: "sort is /usr/bin/sort\n"},
		{name: "env pwd -P", script: "mkdir -p /tmp/only-here && cd /tmp/only-here && env pwd -P", stdout: "/tmp/only-here\n"},
		{name: "type -t and -p", script: "type -t ls echo if; type -p ls", stdout: "file\nbuiltin\nkeyword\n/usr/bin/ls\n"},
		{name: "hash is a no-op", script: "hash ls && echo ok", stdout: "ok\n"},
	})
}
