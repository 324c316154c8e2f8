package main

import "os"

// referenceCommand is the reference server's command for the specs that
// need a server process (conformance.RunOptions.ProcessCommand) when the
// run's target is the in-process reference server: this program itself,
// as "serve" over stdio. os.Executable names "go run"'s temporary binary
// too, which lives as long as the run. nil for other targets, or when the
// program cannot find itself (those specs then run in-process, and the
// crash spec is skipped).
func (f *conformFlags) referenceCommand() []string {
	if f.serverCmd != "" || f.serverURL != "" || f.cloud {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return []string{exe, "serve"}
}
