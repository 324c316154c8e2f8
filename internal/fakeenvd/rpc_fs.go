package fakeenvd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"syscall"

	"connectrpc.com/connect"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// fsError maps a filesystem error to a Connect error with the code a
// client can act on; message is a format with one %w for err.
func fsError(err error, message string) *connect.Error {
	code := connect.CodeInternal
	switch {
	case errors.Is(err, fs.ErrNotExist):
		code = connect.CodeNotFound
	case isErrno(err, syscall.EEXIST):
		code = connect.CodeAlreadyExists
	case isErrno(err, syscall.ENOSPC):
		code = connect.CodeResourceExhausted
	case isErrno(err, syscall.ELOOP), isErrno(err, syscall.ENOTDIR), isErrno(err, syscall.EISDIR),
		isErrno(err, syscall.ENOTEMPTY), isErrno(err, syscall.EINVAL), isErrno(err, syscall.EBUSY):
		code = connect.CodeFailedPrecondition
	}
	return connect.NewError(code, fmt.Errorf(message, err))
}

// entry describes the entry at p (not following a final symlink). A
// symlink reports its target's type and permission bits, with
// SymlinkTarget set to the resolved path, like envd.
func (d *Daemon) entry(p string, info fs.FileInfo) envdapi.EntryInfo {
	mode := info.Mode()
	uid, gid := ownerIDs(info)
	sh := &shell{accounts: d.cfg.accounts()} // for the owner names only
	mtime := info.ModTime().UTC()
	e := envdapi.EntryInfo{
		Name: info.Name(), Path: p, Size: envdapi.Int64(info.Size()), Mode: uint32(mode.Perm()),
		Permissions: mode.String(), Owner: sh.userName(uid), Group: sh.groupName(gid), ModifiedTime: &mtime,
		Type: fileType(mode), Metadata: metadataOf(info),
	}
	if mode&fs.ModeSymlink != 0 {
		target, err := d.fs.RealPath(p)
		if err != nil {
			target = p
		}
		e.SymlinkTarget = &target
		e.Type, e.Mode = envdapi.FileTypeUnspecified, 0
		if ti, err := d.fs.Stat(p); err == nil {
			e.Type, e.Mode = fileType(ti.Mode()), uint32(ti.Mode().Perm())
		}
	}
	return e
}

func fileType(m fs.FileMode) envdapi.FileType {
	switch {
	case m.IsRegular():
		return envdapi.FileTypeFile
	case m.IsDir():
		return envdapi.FileTypeDirectory
	case m&fs.ModeSymlink != 0:
		return envdapi.FileTypeSymlink
	}
	return envdapi.FileTypeUnspecified
}

// lstatEntry describes p or fails with a Connect error.
func (d *Daemon) lstatEntry(p string) (*envdapi.EntryInfo, error) {
	info, err := d.fs.Lstat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fsError(err, "file not found: %w")
		}
		return nil, fsError(err, "error getting file info: %w")
	}
	e := d.entry(p, info)
	return &e, nil
}

// rpcPath resolves a request path for the request's user.
func (d *Daemon) rpcPath(h interface{ Header() http.Header }, p string) (account, string, error) {
	a, err := d.userFrom(h.Header())
	if err != nil {
		return account{}, "", err
	}
	abs, err := resolvePath(p, a)
	if err != nil {
		return account{}, "", connect.NewError(connect.CodeInvalidArgument, err)
	}
	return a, abs, nil
}

func (d *Daemon) rpcStat(_ context.Context, req *connect.Request[envdapi.StatRequest]) (*connect.Response[envdapi.StatResponse], error) {
	_, p, err := d.rpcPath(req, req.Msg.Path)
	if err != nil {
		return nil, err
	}
	e, err := d.lstatEntry(p)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&envdapi.StatResponse{Entry: e}), nil
}

func (d *Daemon) rpcListDir(ctx context.Context, req *connect.Request[envdapi.ListDirRequest]) (*connect.Response[envdapi.ListDirResponse], error) {
	_, p, err := d.rpcPath(req, req.Msg.Path)
	if err != nil {
		return nil, err
	}
	depth := int(req.Msg.Depth)
	if depth == 0 {
		depth = 1
	}
	dir, err := d.fs.RealPath(p)
	switch {
	case isErrno(err, syscall.ELOOP):
		return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("cyclic symlink or chain >255 links at %q", p))
	case err != nil:
		return nil, fsError(err, "path not found: %w")
	}
	info, err := d.fs.Stat(dir)
	if err != nil {
		return nil, fsError(err, "directory not found: %w")
	}
	if !info.IsDir() {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("path is not a directory: %s", dir))
	}
	// Entries are named under the requested path, even when it is a
	// symlink; the walk does not follow symlinks below it.
	var entries []envdapi.EntryInfo
	var walk func(dir, shown string, level int) error
	walk = func(dir, shown string, level int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		ents, err := d.fs.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, de := range ents {
			child, childShown := path.Join(dir, de.Name()), path.Join(shown, de.Name())
			info, err := de.Info()
			if err != nil {
				return err
			}
			entries = append(entries, d.entry(childShown, info))
			if de.IsDir() && level < depth {
				if err := walk(child, childShown, level+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(dir, p, 1); err != nil {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("error reading directory %s: %w", dir, err))
	}
	return connect.NewResponse(&envdapi.ListDirResponse{Entries: entries}), nil
}

func (d *Daemon) rpcMakeDir(_ context.Context, req *connect.Request[envdapi.MakeDirRequest]) (*connect.Response[envdapi.MakeDirResponse], error) {
	a, p, err := d.rpcPath(req, req.Msg.Path)
	if err != nil {
		return nil, err
	}
	if info, err := d.fs.Stat(p); err == nil {
		if info.IsDir() {
			return nil, connect.NewError(connect.CodeAlreadyExists, fmt.Errorf("directory already exists: %s", p))
		}
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("path already exists but it is not a directory: %s", p))
	}
	if err := d.fs.MkdirAllAs(p, 0o755, a.uid, a.gid); err != nil {
		return nil, fsError(err, "failed to create directory: %w")
	}
	e, err := d.lstatEntry(p)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&envdapi.MakeDirResponse{Entry: e}), nil
}

func (d *Daemon) rpcRemove(_ context.Context, req *connect.Request[envdapi.RemoveRequest]) (*connect.Response[envdapi.RemoveResponse], error) {
	_, p, err := d.rpcPath(req, req.Msg.Path)
	if err != nil {
		return nil, err
	}
	if err := d.fs.RemoveAll(p); err != nil {
		return nil, fsError(err, "error removing file or directory: %w")
	}
	return connect.NewResponse(&envdapi.RemoveResponse{}), nil
}

func (d *Daemon) rpcMove(_ context.Context, req *connect.Request[envdapi.MoveRequest]) (*connect.Response[envdapi.MoveResponse], error) {
	a, src, err := d.rpcPath(req, req.Msg.Source)
	if err != nil {
		return nil, err
	}
	dst, err := resolvePath(req.Msg.Destination, a)
	if err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	if _, err := d.fs.Lstat(src); err != nil {
		return nil, fsError(err, "source file not found: %w")
	}
	if err := d.fs.MkdirAllAs(path.Dir(dst), 0o755, a.uid, a.gid); err != nil {
		return nil, fsError(err, "error creating destination directories: %w")
	}
	if err := d.fs.Rename(src, dst); err != nil {
		return nil, fsError(err, "error renaming: %w")
	}
	e, err := d.lstatEntry(dst)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&envdapi.MoveResponse{Entry: e}), nil
}
