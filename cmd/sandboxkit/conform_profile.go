package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"

	"github.com/spf13/pflag"
)

// addProfileFlag adds conform's hidden --cpuprofile flag: it is for the
// kit's own developers, who keep the in-process run short.
func addProfileFlag(fl *pflag.FlagSet, path *string) {
	fl.StringVar(path, "cpuprofile", "", "internal: write a CPU profile of the run to this file (each process of a parallel run to FILE.PID)")
	_ = fl.MarkHidden("cpuprofile")
}

// startCPUProfile starts a CPU profile to path (to path.PID in a process
// of a parallel run, whose parent passes it the same flag) and returns
// what stops it; with no path it does nothing. Read the parent's and the
// processes' files together: go tool pprof BINARY FILE FILE.*.
func startCPUProfile(path string, child bool) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	if child {
		path += "." + strconv.Itoa(os.Getpid())
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}
