package fakeenvd

import (
	"io"
	"io/fs"
)

// FS is what the envd handlers do with the sandbox's files. [MemFS] is
// the default; the OS backend ([NewOS]) works on the real root. Paths are
// absolute. Errors wrap syscall.Errno values as *fs.PathError. The watch
// types are this package's, so the implementations live here too.
type FS interface {
	Stat(name string) (fs.FileInfo, error)
	Lstat(name string) (fs.FileInfo, error)
	ReadDir(name string) ([]fs.DirEntry, error)
	// Open opens a file for reading.
	Open(name string) (io.ReadSeekCloser, error)
	// CreateAs truncates or creates a file, a new one owned by uid/gid.
	CreateAs(name string, uid, gid int) (io.WriteCloser, error)
	MkdirAllAs(name string, perm fs.FileMode, uid, gid int) error
	Rename(oldname, newname string) error
	RemoveAll(name string) error
	Chown(name string, uid, gid int) error
	// SetMetadata replaces the user metadata (envd's user.e2b.* xattrs).
	SetMetadata(name string, meta map[string]string) error
	// RealPath resolves every symlink of name.
	RealPath(name string) (string, error)
	// Watch reports the changes below root (recursively or not) until
	// cancel is called.
	Watch(root string, recursive bool) (w *fsWatch, cancel func(), err error)
}

// memFS adapts a MemFS to FS.
type memFS struct{ *MemFS }

func (m memFS) Open(name string) (io.ReadSeekCloser, error) {
	f, err := m.MemFS.OpenFile(name, 0, 0)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (m memFS) CreateAs(name string, uid, gid int) (io.WriteCloser, error) {
	f, err := m.MemFS.OpenFileAs(name, createFlags, 0o666, uid, gid)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Watch sees the whole tree; the daemon filters by root.
func (m memFS) Watch(string, bool) (*fsWatch, func(), error) {
	w, cancel := m.MemFS.Watch()
	return w, cancel, nil
}
