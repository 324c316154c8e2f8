package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// execFlags choose where a fake sandbox's files and processes live:
// --exec memory (the default) or namespace, with --rootfs.
type execFlags struct {
	mode   string
	rootFS string
}

// add registers --exec and --rootfs on f.
func (e *execFlags) add(f *pflag.FlagSet) {
	f.StringVar(&e.mode, "exec", "memory", `where sandboxes run commands: "memory" (built-in shell, in-memory files, no host process) or "namespace" (Linux, root: real processes and files in per-sandbox namespaces over an overlay of --rootfs; trusted code only)`)
	f.StringVar(&e.rootFS, "rootfs", "/", `with --exec namespace, the read-only lower layer of every sandbox's root filesystem`)
}

// real reports whether the chosen mode makes real sandboxes (processes on
// the host), not in-memory ones.
func (e *execFlags) real() bool { return e.mode == "namespace" }

// kind names the sandboxes the chosen mode makes, for the console.
func (e *execFlags) kind() string {
	if e.real() {
		return "real (namespace) sandboxes of " + e.rootFS
	}
	return "in-memory sandboxes"
}

// newDaemon returns the fake provider's NewDaemon for the chosen mode: nil
// for memory, and for namespace the daemon after a start-up probe, whose
// failure is returned with its reason (never a silent fallback).
func (e *execFlags) newDaemon(ctx context.Context) (func(fakeprovider.DaemonConfig) fakeprovider.Daemon, error) {
	switch e.mode {
	case "memory", "":
		if e.rootFS != "/" {
			return nil, fmt.Errorf("--rootfs needs --exec namespace")
		}
		return nil, nil
	case "namespace":
		if ctx == nil {
			ctx = context.Background()
		}
		nd, err := fakeprovider.NamespaceDaemon(ctx, fakeprovider.NamespaceOptions{RootFS: e.rootFS})
		if err != nil {
			return nil, fmt.Errorf("--exec namespace: %w", err)
		}
		return nd, nil
	}
	return nil, fmt.Errorf(`--exec must be "memory" or "namespace", got %q`, e.mode)
}
