package fakeprovider

import (
	"context"
	"fmt"
	"net/http"

	"github.com/sandboxkit/sandboxkit/internal/fakeenvd"
	"github.com/sandboxkit/sandboxkit/internal/nsexec"
)

// NamespaceOptions configure [NamespaceDaemon].
type NamespaceOptions struct {
	// RootFS is the read-only lower layer of every sandbox's root; default
	// "/" (the host's root filesystem, without its other mounts).
	RootFS string
	// WorkDir holds each sandbox's writable layer; default os.TempDir().
	WorkDir string
}

// NamespaceDaemon returns an [Options.NewDaemon] that makes every sandbox
// a real Linux environment: this program re-run in new mount, pid, uts,
// ipc and network namespaces over an overlay of opts.RootFS, serving envd
// with real files and real processes (python3, git, a loopback server:
// whatever the root filesystem has). It is for trusted code only; see
// the package documentation for what differs from the in-memory daemon.
//
// It first starts one sandbox and runs `true` in it, and returns the
// reason when that fails (not Linux: errors.ErrUnsupported; not root; no
// overlayfs). The program must call [RunSandboxRole] first thing in main
// (and in TestMain). A sandbox that later fails to start gets a daemon
// that answers every request with the platform's 502.
func NamespaceDaemon(ctx context.Context, opts NamespaceOptions) (func(DaemonConfig) Daemon, error) {
	o := nsexec.Options{RootFS: opts.RootFS, WorkDir: opts.WorkDir}
	if err := nsexec.Probe(ctx, o); err != nil {
		return nil, fmt.Errorf("namespace sandboxes: %w", err)
	}
	return func(c DaemonConfig) Daemon {
		s, err := nsexec.Start(o, fakeenvd.Config{SandboxID: c.SandboxID, TemplateID: c.TemplateID, AccessToken: c.AccessToken, EnvVars: c.EnvVars})
		if err != nil {
			return goneDaemon(c.SandboxID)
		}
		return s
	}, nil
}

// RunSandboxRole turns a process that [NamespaceDaemon] re-ran into the
// sandbox it is meant to be, and never returns in that process; in every
// other process it returns at once.
func RunSandboxRole() { nsexec.Main() }

// goneDaemon answers every request as the edge does for a sandbox whose
// VM is gone.
type goneDaemon string

func (g goneDaemon) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	fakeenvd.WriteGone(w, string(g))
}

func (goneDaemon) Close() {}
