//go:build linux

package nsexec

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/sandboxkit/sandboxkit/internal/fakeenvd"
)

// benchSandbox starts a sandbox or skips the benchmark with the reason.
func benchSandbox(b *testing.B) *Sandbox {
	b.Helper()
	s, err := Start(Options{}, fakeenvd.Config{SandboxID: "bench"})
	if err != nil {
		b.Skipf("namespace sandboxes unavailable here: %v", err)
	}
	return s
}

// BenchmarkSandboxStart is the time from Start to a daemon that serves.
func BenchmarkSandboxStart(b *testing.B) {
	for b.Loop() {
		s := benchSandbox(b)
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
}

// BenchmarkSandboxStop is the time Close takes: kill, reap, remove the layer.
func BenchmarkSandboxStop(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		s := benchSandbox(b)
		b.StartTimer()
		s.Close()
	}
}

// benchCommand runs argv through envd once per iteration in one sandbox.
func benchCommand(b *testing.B, argv ...string) {
	s := benchSandbox(b)
	defer s.Close()
	for b.Loop() {
		res, err := s.run(context.Background(), argv[0], argv[1:]...)
		if err != nil || res.code != 0 {
			b.Fatalf("%v: %v %+v", argv, err, res)
		}
	}
}

func BenchmarkCommandTrue(b *testing.B)   { benchCommand(b, "true") }
func BenchmarkCommandPython(b *testing.B) { benchCommand(b, "python3", "-c", "pass") }

// BenchmarkIdleMemory reports the proportional set size of an idle
// sandbox's processes (its first process and its daemon), in kB.
func BenchmarkIdleMemory(b *testing.B) {
	var total, n int
	for b.Loop() {
		s := benchSandbox(b)
		kb, err := treePSS(s.Pid())
		s.Close()
		if err != nil {
			b.Fatal(err)
		}
		total += kb
		n++
	}
	b.ReportMetric(float64(total)/float64(n), "kB-PSS/sandbox")
}

// treePSS sums the Pss of pid and its descendants.
func treePSS(pid int) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, err
	}
	kb := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Pss:"); ok {
			kb, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			break
		}
	}
	f.Close()
	children, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	for _, c := range strings.Fields(string(children)) {
		cpid, _ := strconv.Atoi(c)
		ckb, err := treePSS(cpid)
		if err != nil {
			return 0, err
		}
		kb += ckb
	}
	return kb, nil
}
