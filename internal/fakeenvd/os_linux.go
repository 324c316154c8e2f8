//go:build linux

package fakeenvd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/creack/pty"
	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// NewOS returns a daemon whose files are the real ones under / and whose
// processes are real: every command runs as envd runs it, `/bin/sh -c`
// with the requesting user's credentials. It is meant to run inside a
// sandbox's own namespaces (package nsexec sets them up); started on a
// bare host it serves the host. Builtins and DiskQuota are ignored.
func NewOS(cfg Config) (*Daemon, error) {
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancelCause(context.Background())
	procs := newProcTable()
	d := &Daemon{cfg: cfg, fs: osFS{}, runner: execRunner{}, procs: procs, jobs: newJobTable(procs), ctx: ctx, cancel: cancel, memLimit: maxInMemory}
	d.mux = d.routes()
	return d, nil
}

// osFS is FS over the real filesystem of the process.
type osFS struct{}

// osInfo converts the kernel's answer for p into the daemon's fileInfo,
// with the owner ids and the user.e2b.* metadata.
func osInfo(p string, info fs.FileInfo, follow bool) *fileInfo {
	fi := &fileInfo{name: info.Name(), size: info.Size(), mode: info.Mode(), mtime: info.ModTime()}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		fi.uid, fi.gid = int(st.Uid), int(st.Gid)
	}
	fi.meta = readMetadata(p, follow)
	return fi
}

// readMetadata reads envd's metadata xattrs of p; none when unsupported.
func readMetadata(p string, follow bool) map[string]string {
	list, get := unix.Llistxattr, unix.Lgetxattr
	if follow {
		list, get = unix.Listxattr, unix.Getxattr
	}
	buf := make([]byte, 4096)
	n, err := list(p, buf)
	if err != nil || n == 0 {
		return nil
	}
	var meta map[string]string
	val := make([]byte, 4096)
	for name := range strings.SplitSeq(string(buf[:n]), "\x00") {
		key, ok := strings.CutPrefix(name, metadataXattrPrefix)
		if !ok || key == "" {
			continue
		}
		m, err := get(p, name, val)
		if err != nil {
			continue
		}
		if meta == nil {
			meta = map[string]string{}
		}
		meta[key] = string(val[:m])
	}
	return meta
}

func (osFS) Stat(name string) (fs.FileInfo, error) {
	info, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	return osInfo(name, info, true), nil
}

func (osFS) Lstat(name string) (fs.FileInfo, error) {
	info, err := os.Lstat(name)
	if err != nil {
		return nil, err
	}
	return osInfo(name, info, false), nil
}

// osDirEntry is a directory entry whose Info carries owners and metadata.
type osDirEntry struct {
	fs.DirEntry
	dir string
}

func (e osDirEntry) Info() (fs.FileInfo, error) {
	info, err := e.DirEntry.Info()
	if err != nil {
		return nil, err
	}
	return osInfo(path.Join(e.dir, e.Name()), info, false), nil
}

func (osFS) ReadDir(name string) ([]fs.DirEntry, error) {
	ents, err := os.ReadDir(name)
	out := make([]fs.DirEntry, len(ents))
	for i, e := range ents {
		out[i] = osDirEntry{e, name}
	}
	return out, err
}

func (osFS) Open(name string) (io.ReadSeekCloser, error) { return os.Open(name) }

// CreateAs truncates or creates name, then gives it to uid/gid as envd
// does with an upload.
func (osFS) CreateAs(name string, uid, gid int) (io.WriteCloser, error) {
	f, err := os.OpenFile(name, createFlags, 0o666)
	if err != nil {
		return nil, err
	}
	if err := f.Chown(uid, gid); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// MkdirAllAs creates the missing directories of name, each owned by
// uid/gid (envd's permissions.EnsureDirs).
func (osFS) MkdirAllAs(name string, perm fs.FileMode, uid, gid int) error {
	if info, err := os.Stat(name); err == nil {
		if info.IsDir() {
			return nil
		}
		return &fs.PathError{Op: "mkdir", Path: name, Err: syscall.ENOTDIR}
	}
	if parent := path.Dir(name); parent != name {
		if err := (osFS{}).MkdirAllAs(parent, perm, uid, gid); err != nil {
			return err
		}
	}
	if err := os.Mkdir(name, perm); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return os.Lchown(name, uid, gid)
}

func (osFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }
func (osFS) RemoveAll(name string) error          { return os.RemoveAll(name) }
func (osFS) Chown(name string, uid, gid int) error {
	return os.Chown(name, uid, gid)
}

// SetMetadata replaces the user.e2b.* xattrs of name. A filesystem
// without user xattrs keeps none, and the call succeeds, as envd's does.
func (osFS) SetMetadata(name string, meta map[string]string) error {
	for key := range readMetadata(name, true) {
		_ = unix.Removexattr(name, metadataXattrPrefix+key)
	}
	for key, value := range meta {
		err := unix.Setxattr(name, metadataXattrPrefix+key, []byte(value), 0)
		if errors.Is(err, unix.ENOTSUP) {
			return nil
		}
		if err != nil {
			return &fs.PathError{Op: "setxattr", Path: name, Err: err}
		}
	}
	return nil
}

func (osFS) RealPath(name string) (string, error) { return filepath.EvalSymlinks(name) }

// Watch reports the changes below root through inotify (fsnotify, as
// envd's watcher); a recursive watch adds every directory below root, and
// each one created later.
func (osFS) Watch(root string, recursive bool) (*fsWatch, func(), error) {
	nw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, nil, err
	}
	if err := addWatches(nw, root, recursive); err != nil {
		nw.Close()
		return nil, nil, err
	}
	w := &fsWatch{ch: make(chan fsChange, watchQueue), overflow: make(chan struct{})}
	done := make(chan struct{})
	go forwardInotify(nw, w, recursive, done)
	var once sync.Once
	return w, func() {
		once.Do(func() {
			close(done)
			nw.Close()
		})
	}, nil
}

// addWatches watches dir and, when recursive, every directory below it.
func addWatches(nw *fsnotify.Watcher, dir string, recursive bool) error {
	if !recursive {
		return nw.Add(dir)
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone meanwhile, or unreadable: not watched
		}
		if d.IsDir() {
			return nw.Add(p)
		}
		return nil
	})
}

// inotifyOps maps fsnotify's operations to envd's event types, in the
// order envd reports them for one event.
var inotifyOps = []struct {
	op fsnotify.Op
	t  envdapi.EventType
}{
	{fsnotify.Create, envdapi.EventTypeCreate}, {fsnotify.Write, envdapi.EventTypeWrite},
	{fsnotify.Remove, envdapi.EventTypeRemove}, {fsnotify.Rename, envdapi.EventTypeRename},
	{fsnotify.Chmod, envdapi.EventTypeChmod},
}

// forwardInotify turns fsnotify's events into changes until done; a full
// queue, or the kernel's overflow, marks the watch overflowed.
func forwardInotify(nw *fsnotify.Watcher, w *fsWatch, recursive bool, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case err, ok := <-nw.Errors:
			if !ok || errors.Is(err, fsnotify.ErrEventOverflow) {
				close(w.overflow)
				return
			}
		case ev, ok := <-nw.Events:
			if !ok {
				return
			}
			if recursive && ev.Has(fsnotify.Create) {
				if info, err := os.Lstat(ev.Name); err == nil && info.IsDir() {
					_ = addWatches(nw, ev.Name, true)
				}
			}
			for _, m := range inotifyOps {
				if !ev.Has(m.op) {
					continue
				}
				select {
				case w.ch <- fsChange{path: ev.Name, op: m.t}:
				default:
					close(w.overflow)
					return
				}
			}
		}
	}
}

// execRunner starts real processes as envd does (infra packages/envd/
// internal/services/process/handler/handler.go).
type execRunner struct{}

// osProc is a real process and the readers of its output.
type osProc struct {
	cmd    *exec.Cmd
	stdin  *os.File
	tty    *os.File // the terminal's master, nil without one
	copied sync.WaitGroup
}

// Start runs `/bin/sh -c 'exec "$@"' -- argv...` in spec.Dir with the
// account's uid and gid. Output is read in envd's chunk sizes (32 KiB
// stdio, 16 KiB terminal).
func (execRunner) Start(_ context.Context, spec ProcSpec) (Proc, error) {
	cmd := exec.Command("/bin/sh", append([]string{"-c", `exec "$@"`, "--"}, spec.Argv...)...)
	cmd.Dir, cmd.Env = spec.Dir, spec.Env
	cred := &syscall.Credential{Uid: uint32(spec.UID), Gid: uint32(spec.GID), Groups: []uint32{}}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if spec.PTY != nil {
		return startTTY(cmd, spec)
	}
	p := &osProc{cmd: cmd}
	var closeAfter []*os.File
	defer func() {
		for _, f := range closeAfter {
			f.Close()
		}
	}()
	if spec.Stdin {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("stdin pipe: %w", err)
		}
		cmd.Stdin, p.stdin = r, w
		closeAfter = append(closeAfter, r)
	}
	for i, dst := range []io.Writer{spec.Stdout, spec.Stderr} {
		r, w, err := os.Pipe()
		if err != nil {
			p.closeAll()
			return nil, fmt.Errorf("output pipe: %w", err)
		}
		if i == 0 {
			cmd.Stdout = w
		} else {
			cmd.Stderr = w
		}
		closeAfter = append(closeAfter, w)
		p.copy(dst, r, 32<<10)
	}
	if err := cmd.Start(); err != nil {
		p.closeAll()
		return nil, fmt.Errorf("error starting process: %w", err)
	}
	return p, nil
}

// startTTY runs cmd on a new terminal of spec's size.
func startTTY(cmd *exec.Cmd, spec ProcSpec) (Proc, error) {
	master, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: uint16(spec.PTY.Rows), Cols: uint16(spec.PTY.Cols)})
	if err != nil {
		return nil, fmt.Errorf("error starting pty with command: %w", err)
	}
	fd, err := unix.Dup(int(master.Fd()))
	if err != nil {
		_ = cmd.Process.Kill()
		master.Close()
		return nil, fmt.Errorf("dup pty: %w", err)
	}
	p := &osProc{cmd: cmd, tty: master, stdin: os.NewFile(uintptr(fd), "pty-input")}
	p.copy(spec.Stdout, master, 16<<10)
	return p, nil
}

// copy forwards r to dst in chunks of size until r ends.
func (p *osProc) copy(dst io.Writer, r *os.File, size int) {
	p.copied.Add(1)
	go func() {
		defer p.copied.Done()
		defer r.Close()
		buf := make([]byte, size)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				_, _ = dst.Write(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
}

func (p *osProc) closeAll() {
	if p.stdin != nil {
		p.stdin.Close()
	}
}

func (p *osProc) Pid() uint32     { return uint32(p.cmd.Process.Pid) }
func (p *osProc) Stdin() *os.File { return p.stdin }

// Signal goes to the process only: no process group, as in envd.
func (p *osProc) Signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

func (p *osProc) Resize(size envdapi.PTYSize) error {
	if p.tty == nil {
		return errNoTerminal
	}
	return pty.Setsize(p.tty, &pty.Winsize{Rows: uint16(size.Rows), Cols: uint16(size.Cols)})
}

// Wait reaps the process, then waits until its output was read.
func (p *osProc) Wait() (int, error) {
	_ = p.cmd.Wait()
	p.copied.Wait()
	st := p.cmd.ProcessState
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, killSignal(ws.Signal())
	}
	return st.ExitCode(), nil
}
