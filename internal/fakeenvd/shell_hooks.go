package fakeenvd

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"mvdan.cc/sh/v3/interp"
)

// Internal command names the call handler rewrites host-probing builtins to.
const (
	typeCmd     = "\x00sandboxkit-type"
	commandVCmd = "\x00sandboxkit-command-v"
)

// callHandler rewrites the builtins that would probe the host: type and
// command -v/-V search $PATH on the host, pwd -P resolves symlinks on the
// host, and source looks the script up in $PATH on the host.
func (s *shell) callHandler(ctx context.Context, args []string) ([]string, error) {
	name := args[0]
	if name == "eval" || name == "source" || name == "." || !interp.IsBuiltin(name) && s.bins[name] == nil {
		// Function calls, scripts and eval nest; builtins do not.
		if err := s.checkCall(name); err != nil {
			return nil, err
		}
	}
	return s.rewriteProbe(interp.HandlerCtx(ctx), args), nil
}

// rewriteProbe is the rewrite of callHandler, also applied to commands
// reached through exec, env, xargs and friends.
func (s *shell) rewriteProbe(hc interp.HandlerContext, args []string) []string {
	switch args[0] {
	case "builtin":
		if len(args) > 1 {
			if out := s.rewriteProbe(hc, args[1:]); out[0] != args[1] {
				return out
			}
		}
	case "type":
		return append([]string{typeCmd}, args[1:]...)
	case "wait":
		return append([]string{waitCmd}, args[1:]...)
	case "kill":
		return append([]string{killCmd}, args[1:]...)
	case "jobs":
		return append([]string{jobsCmd}, args[1:]...)
	case "command":
		if len(args) > 1 && (args[1] == "-v" || args[1] == "-V") {
			return append([]string{commandVCmd}, args[1:]...)
		}
	case "pwd":
		out := []string{"pwd"}
		for _, a := range args[1:] {
			if a == "-P" {
				a = "-L"
			}
			out = append(out, a)
		}
		return out
	case "source", ".":
		if len(args) > 1 {
			out := append([]string{}, args...)
			out[1] = s.sourcePath(hc, args[1])
			return out
		}
	}
	return args
}

// sourcePath resolves a `source` argument in the memory filesystem the way
// bash does: names without a slash are searched in $PATH, then in the
// working directory.
func (s *shell) sourcePath(hc interp.HandlerContext, name string) string {
	if path.IsAbs(name) {
		return name
	}
	if !strings.Contains(name, "/") {
		inv := &Invocation{Dir: hc.Dir, FS: s.fs, env: hc.Env}
		if p := s.lookPath(inv, name, false); p != "" {
			return p
		}
	}
	return path.Join(hc.Dir, name)
}

// stdStream adapts a standard stream to io.ReadWriteCloser for
// /dev/stdin, /dev/stdout and /dev/stderr; Close does nothing.
type stdStream struct {
	r io.Reader
	w io.Writer
}

func (s stdStream) Read(p []byte) (int, error) {
	if s.r == nil {
		return 0, &fs.PathError{Op: "read", Path: "/dev/stdout", Err: syscall.EBADF}
	}
	return s.r.Read(p)
}

func (s stdStream) Write(p []byte) (int, error) {
	if s.w == nil {
		return 0, &fs.PathError{Op: "write", Path: "/dev/stdin", Err: syscall.EBADF}
	}
	return s.w.Write(p)
}

func (stdStream) Close() error { return nil }

// asPathError makes sure the interpreter gets an *fs.PathError: any other
// error type would halt the whole script.
func asPathError(err error, op, name string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		errno = syscall.EIO
	}
	return &fs.PathError{Op: op, Path: name, Err: errno}
}

// openHandler serves redirections and `source` from the memory filesystem.
func (s *shell) openHandler(ctx context.Context, name string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
	hc := interp.HandlerCtx(ctx)
	abs := name
	if !path.IsAbs(abs) {
		abs = path.Join(hc.Dir, abs)
	}
	abs = path.Clean(abs)
	switch abs {
	case "/dev/stdin", "/dev/fd/0":
		return stdStream{r: hc.Stdin}, nil
	case "/dev/stdout", "/dev/fd/1":
		return stdStream{w: hc.Stdout}, nil
	case "/dev/stderr", "/dev/fd/2":
		return stdStream{w: hc.Stderr}, nil
	case "/dev/tty":
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENXIO}
	}
	if flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		if info, err := s.fs.Stat(abs); err == nil && info.IsDir() {
			return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
		}
	}
	f, err := s.fs.OpenFileAs(abs, flag, perm, s.acct.uid, s.acct.gid)
	if err != nil && flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		return nil, redirError(asPathError(err, "open", name))
	}
	if err != nil {
		return nil, asPathError(err, "open", name)
	}
	return f, nil
}

// redirError words a failed output redirection as bash does ("bash: PATH:
// Permission denied"): the interpreter prints an open handler's
// *fs.PathError as it is, and only that type is not fatal to the script.
// Opens for reading keep Go's wording ("open PATH: ..."): `source` opens
// through the same handler and adds its own prefix.
func redirError(err error) error {
	var pe *fs.PathError
	var errno syscall.Errno
	if !errors.As(err, &pe) || !errors.As(pe.Err, &errno) {
		return err
	}
	return &fs.PathError{Op: "bash:", Path: pe.Path, Err: strerror{errno}}
}

// strerror is an errno worded as C's strerror words it ("Permission
// denied"), as bash prints it; errors.Is still sees the errno.
type strerror struct{ errno syscall.Errno }

func (e strerror) Error() string {
	msg := e.errno.Error()
	if msg == "" {
		return msg
	}
	return strings.ToUpper(msg[:1]) + msg[1:]
}

func (e strerror) Unwrap() error { return e.errno }

// statHandler serves test -e/-f/-d, [[ ]] and cd from the memory filesystem.
func (s *shell) statHandler(_ context.Context, name string, followSymlinks bool) (fs.FileInfo, error) {
	var info fs.FileInfo
	var err error
	if followSymlinks {
		info, err = s.fs.Stat(name)
	} else {
		info, err = s.fs.Lstat(name)
	}
	if err != nil {
		return nil, asPathError(err, "stat", name)
	}
	return hostOwnerView{info, s.acct}, nil
}

// hostOwnerView presents ownership to the interpreter's [[ -O ]] and
// [[ -G ]], which compare Sys().(*syscall.Stat_t) with the ids of the host
// process: entries owned by the sandbox user report the host's ids, all
// others ids that differ from them.
type hostOwnerView struct {
	fs.FileInfo
	acct account
}

func (v hostOwnerView) Sys() any {
	uid, gid := ownerIDs(v.FileInfo)
	hostUID, hostGID := uint32(os.Getuid()), uint32(os.Getgid())
	st := &syscall.Stat_t{Uid: hostUID + 1, Gid: hostGID + 1}
	if uid == v.acct.uid {
		st.Uid = hostUID
	}
	if gid == v.acct.gid {
		st.Gid = hostGID
	}
	return st
}

// readDirHandler serves globbing from the memory filesystem.
func (s *shell) readDirHandler(_ context.Context, name string) ([]fs.DirEntry, error) {
	ents, err := s.fs.ReadDir(name)
	if err != nil {
		return nil, asPathError(err, "readdirent", name)
	}
	return ents, nil
}

// accessHandler serves test -r/-w/-x and cd's search permission check from
// the memory filesystem's modes and owners.
func (s *shell) accessHandler(_ context.Context, name string, mode interp.AccessMode) error {
	info, err := s.fs.Stat(name)
	if err != nil {
		return asPathError(err, "access", name)
	}
	if !s.canAccess(info, mode) {
		return &fs.PathError{Op: "access", Path: name, Err: syscall.EACCES}
	}
	return nil
}

// canAccess checks mode against the entry's permission bits for the user.
func (s *shell) canAccess(info fs.FileInfo, mode interp.AccessMode) bool {
	perm := info.Mode().Perm()
	if s.acct.uid == 0 {
		return mode&interp.AccessExec == 0 || info.IsDir() || perm&0o111 != 0
	}
	uid, gid := ownerIDs(info)
	var bits fs.FileMode
	switch {
	case uid == s.acct.uid:
		bits = perm >> 6 & 7
	case gid == s.acct.gid:
		bits = perm >> 3 & 7
	default:
		bits = perm & 7
	}
	return interp.AccessMode(bits)&mode == mode
}
