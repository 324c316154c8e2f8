package main

import (
	"testing"

	"github.com/spf13/cobra"
)

// TestDefaultProcesses: without --procs, the in-process reference server on
// in-memory sandboxes runs in defaultInProcessProcs processes, a stdio
// command and real sandboxes in defaultProcs, and a run that cannot split
// in one; --procs overrides where the run can split.
func TestDefaultProcesses(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(*conformFlags)
		args []string
		want int
	}{
		{"in-process, memory", func(*conformFlags) {}, nil, defaultInProcessProcs},
		{"stdio command", func(f *conformFlags) { f.serverCmd = "server --stdio" }, nil, defaultProcs},
		{"namespace sandboxes", func(f *conformFlags) { f.exec.mode = "namespace" }, nil, defaultProcs},
		{"server URL", func(f *conformFlags) { f.serverURL = "http://127.0.0.1:1/mcp" }, nil, 1},
		{"--procs 2", func(*conformFlags) {}, []string{"--procs", "2"}, 2},
	} {
		f := &conformFlags{fakeAddr: "127.0.0.1:0"}
		f.exec.mode = "memory"
		c.set(f)
		cmd := &cobra.Command{}
		cmd.Flags().IntVar(&f.procs, "procs", 0, "")
		if err := cmd.ParseFlags(c.args); err != nil {
			t.Fatal(err)
		}
		got, err := f.processes(cmd)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s: %d processes, want %d", c.name, got, c.want)
		}
	}
}
