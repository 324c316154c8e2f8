package fakeenvd

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"connectrpc.com/connect"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// closeWait bounds how long Close waits for killed processes to finish.
const closeWait = 5 * time.Second

// Daemon is the fake envd of one sandbox. It is an http.Handler.
type Daemon struct {
	cfg Config
	// fs is where the handlers find files: mem, or the real root.
	fs FS
	// mem is the in-memory filesystem; nil in the OS backend.
	mem    *MemFS
	runner Runner
	bins   map[string]Builtin
	procs  *procTable
	// jobs are the shell's background jobs, by PID.
	jobs *jobTable
	// watchers are the polled watchers of CreateWatcher.
	watchers watcherTable
	// mux serves the routes. New leaves it to the first request
	// (muxOnce): most sandboxes of a conformance run are seeded for list
	// and lifecycle calls and never reach their daemon, and building the
	// Connect handlers cost a seeded sandbox more than the rest of it.
	mux     *http.ServeMux
	muxOnce sync.Once
	ctx     context.Context
	cancel  context.CancelCauseFunc
	closed  atomic.Bool
	once    sync.Once
	// memLimit is maxInMemory; tests lower it.
	memLimit int
}

// New returns a daemon for cfg with the base filesystem laid out (/usr/bin
// with a stub per built-in, /tmp, /etc, /dev/null, the homes of root and
// the default user). It panics if cfg.Home collides with that layout.
func New(cfg Config) *Daemon {
	cfg = cfg.withDefaults()
	bins := DefaultBuiltins()
	for name, b := range cfg.Builtins {
		if b == nil {
			delete(bins, name)
		} else {
			bins[name] = b
		}
	}
	fs := NewMemFS(cfg.Home, 1000, 1000, 0)
	stubs := map[string]Builtin{}
	for name, b := range bins {
		stubs[name] = b
	}
	for _, name := range shellBuiltinNames() {
		stubs[name] = nil
	}
	if err := populate(fs, cfg, stubs); err != nil {
		panic(fmt.Sprintf("fakeenvd.New: %v", err))
	}
	fs.mu.Lock()
	fs.quota = cfg.DiskQuota
	fs.mu.Unlock()
	ctx, cancel := context.WithCancelCause(context.Background())
	procs := newProcTable()
	d := &Daemon{cfg: cfg, fs: memFS{fs}, mem: fs, bins: bins, procs: procs, jobs: newJobTable(procs), ctx: ctx, cancel: cancel, memLimit: maxInMemory}
	d.runner = memRunner{d}
	return d
}

// routes builds the internal mux from the route table.
func (d *Daemon) routes() *http.ServeMux {
	mux := http.NewServeMux()
	opts := []connect.HandlerOption{
		connect.WithCodec(envdapi.Codec{}),
		connect.WithCompression("gzip", nil, nil),
	}
	mux.Handle(sandbox.OpProcessStart, connect.NewServerStreamHandler(envdapi.ProcessStartProcedure, d.rpcStart, opts...))
	mux.Handle(sandbox.OpProcessConnect, connect.NewServerStreamHandler(envdapi.ProcessConnectProcedure, d.rpcConnect, opts...))
	mux.Handle(sandbox.OpProcessList, connect.NewUnaryHandler(envdapi.ProcessListProcedure, d.rpcList, opts...))
	mux.Handle(sandbox.OpProcessSendInput, connect.NewUnaryHandler(envdapi.ProcessSendInputProcedure, d.rpcSendInput, opts...))
	mux.Handle(sandbox.OpProcessSendSignal, connect.NewUnaryHandler(envdapi.ProcessSendSignalProcedure, d.rpcSendSignal, opts...))
	mux.Handle(sandbox.OpProcessCloseStdin, connect.NewUnaryHandler(envdapi.ProcessCloseStdinProcedure, d.rpcCloseStdin, opts...))
	mux.Handle(sandbox.OpProcessUpdate, connect.NewUnaryHandler(envdapi.ProcessUpdateProcedure, d.rpcUpdate, opts...))
	mux.Handle(sandbox.OpFilesystemStat, connect.NewUnaryHandler(envdapi.FilesystemStatProcedure, d.rpcStat, opts...))
	mux.Handle(sandbox.OpFilesystemListDir, connect.NewUnaryHandler(envdapi.FilesystemListDirProcedure, d.rpcListDir, opts...))
	mux.Handle(sandbox.OpFilesystemMakeDir, connect.NewUnaryHandler(envdapi.FilesystemMakeDirProcedure, d.rpcMakeDir, opts...))
	mux.Handle(sandbox.OpFilesystemRemove, connect.NewUnaryHandler(envdapi.FilesystemRemoveProcedure, d.rpcRemove, opts...))
	mux.Handle(sandbox.OpFilesystemMove, connect.NewUnaryHandler(envdapi.FilesystemMoveProcedure, d.rpcMove, opts...))
	mux.Handle(sandbox.OpFilesystemWatchDir, connect.NewServerStreamHandler(envdapi.FilesystemWatchDirProcedure, d.rpcWatchDir, opts...))
	mux.Handle(sandbox.OpFilesystemCreateWatcher, connect.NewUnaryHandler(envdapi.FilesystemCreateWatcherProcedure, d.rpcCreateWatcher, opts...))
	mux.Handle(sandbox.OpFilesystemGetWatcherEvents, connect.NewUnaryHandler(envdapi.FilesystemGetWatcherEventsProcedure, d.rpcGetWatcherEvents, opts...))
	mux.Handle(sandbox.OpFilesystemRemoveWatcher, connect.NewUnaryHandler(envdapi.FilesystemRemoveWatcherProcedure, d.rpcRemoveWatcher, opts...))
	mux.HandleFunc(sandbox.OpFilesDownload, d.serveDownload)
	mux.HandleFunc(sandbox.OpFilesUpload, d.serveUpload)
	mux.HandleFunc(sandbox.OpEnvdHealth, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

// ServeHTTP serves the envd HTTP surface. After Close every request gets
// 502 with the body of the platform's edge for a sandbox that is gone.
func (d *Daemon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if d.closed.Load() {
		WriteGone(w, d.cfg.SandboxID)
		return
	}
	if !d.authorized(r) {
		writeJSONError(w, http.StatusUnauthorized, unauthorizedMessage)
		return
	}
	d.muxOnce.Do(func() {
		if d.mux == nil {
			d.mux = d.routes()
		}
	})
	d.mux.ServeHTTP(w, r)
}

// Close kills every process and makes later requests fail with 502. It
// waits briefly for the processes to finish and may be called many times.
func (d *Daemon) Close() {
	d.once.Do(func() {
		d.closed.Store(true)
		d.cancel(killSignal(syscall.SIGKILL))
		d.procs.killAll(closeWait)
		d.watchers.closeAll()
	})
}

// Reboot is what resuming a sandbox paused without its memory does (E2B
// SDK pause(keep_memory=False): "resuming such a sandbox cold-boots
// (reboots) it from disk, losing running processes and open connections"):
// every process is killed, every watch ends, the filesystem stays, and
// the kernel's boot ID changes.
func (d *Daemon) Reboot() {
	d.procs.killAll(closeWait)
	d.watchers.closeAll()
	if d.mem == nil {
		return
	}
	if err := writeBootID(d.mem); err != nil {
		panic(fmt.Sprintf("fakeenvd: reboot: %v", err))
	}
}

// FS returns the in-memory sandbox filesystem, for tests and inspection;
// nil in the OS backend.
func (d *Daemon) FS() *MemFS { return d.mem }

// Processes returns the running processes ordered by pid.
func (d *Daemon) Processes() []envdapi.ProcessInfo {
	var out []envdapi.ProcessInfo
	for _, p := range d.procs.all() {
		out = append(out, p.info())
	}
	return out
}

// Builtins returns the sorted names of the built-in commands.
func (d *Daemon) Builtins() []string {
	names := make([]string, 0, len(d.bins))
	for name := range d.bins {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// shellFor returns the shell that runs processes as a.
func (d *Daemon) shellFor(a account) *shell {
	return &shell{fs: d.mem.As(a.uid, a.gid), bins: d.bins, jobs: d.jobs, acct: a, accounts: d.cfg.accounts(), memLimit: d.memLimit}
}

// resolvePath expands "~" and makes p absolute against the user's home,
// as envd does for every path it receives.
func resolvePath(p string, a account) (string, error) {
	if strings.HasPrefix(p, "~") {
		if len(p) > 1 && p[1] != '/' {
			return "", fmt.Errorf("failed to expand path '%s' for user '%s': cannot expand user-specific home dir", p, a.name)
		}
		p = path.Join(a.home, p[1:])
	}
	if !path.IsAbs(p) {
		p = path.Join(a.home, p)
	}
	return path.Clean(p), nil
}
