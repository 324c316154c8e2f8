package fakeenvd

import (
	"strings"
	"testing"
	"time"
)

// TestRunawayScripts checks that recursion and fork bombs end with bash's
// errors instead of taking the host process down, and that the sandbox
// keeps working afterwards.
func TestRunawayScripts(t *testing.T) {
	d := newDaemon(t, Config{})
	for _, tc := range []struct {
		name, script, stderr string
	}{
		{"function recursion", "f() { f; }; f", "maximum function nesting level exceeded"},
		{"script recursion", "echo 'bash ./r.sh' > r.sh; bash r.sh", "maximum shell nesting level exceeded"},
		{"fork bomb", "g() { g & g; }; g", "fork: retry: Resource temporarily unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Now()
			r := run(t, d, tc.script)
			if !strings.Contains(r.stderr, tc.stderr) || r.code() == 0 && !strings.Contains(tc.script, "r.sh") {
				t.Fatalf("end %+v stderr %.300q", r.end, r.stderr)
			}
			t.Logf("stopped after %v", time.Since(t0))
			if r := run(t, d, "echo still fine"); r.stdout != "still fine\n" {
				t.Fatalf("afterwards: %q %q", r.stdout, r.stderr)
			}
		})
	}
	// Ordinary recursion well below the limit works.
	r := run(t, d, "fib() { if [ $1 -lt 2 ]; then echo $1; else echo $(( $(fib $(($1-1))) + $(fib $(($1-2))) )); fi; }; fib 12")
	if r.stdout != "144\n" {
		t.Fatalf("fib: %q %q", r.stdout, r.stderr)
	}
}

func TestMemoryCaps(t *testing.T) {
	d := newDaemon(t, Config{})
	d.memLimit = 1 << 20
	runShellCases(t, d, []shellCase{
		{name: "command substitution of an endless stream", script: "x=$(yes); echo ${#x} > /dev/null; echo done", stdout: "done\n", stderr: "yes: write error: Cannot allocate memory"},
		{name: "sort of an endless stream", script: "sort /dev/zero", stderr: "sort: memory exhausted", code: 2},
		{name: "tail of an endless stream", script: "tail -c 1 /dev/zero", stderr: "tail: memory exhausted", code: 1},
	})
}
