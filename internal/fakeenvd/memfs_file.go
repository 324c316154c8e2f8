package fakeenvd

import (
	"crypto/rand"
	"io"
	"io/fs"
	"os"
	"path"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// File is an open handle on a [MemFS] entry. It implements io.Reader,
// io.Writer, io.Seeker, io.ReaderAt and io.Closer. A handle keeps working
// after its entry is removed, like an unlinked inode.
type File struct {
	fs   *MemFS
	n    *node
	name string
	flag int

	mu     sync.Mutex // guards off and closed
	off    int64
	closed bool
}

// OpenFile opens name with os.OpenFile flags. O_CREATE creates a missing
// file (the parent must exist) with perm minus the umask, O_EXCL fails on an
// existing entry, O_TRUNC empties a regular file, and opening a directory
// for writing fails with EISDIR.
func (m *MemFS) OpenFile(name string, flag int, perm fs.FileMode) (*File, error) {
	return m.OpenFileAs(name, flag, perm, -1, -1)
}

// OpenFileAs is OpenFile with a created file owned by uid/gid (negative
// values mean the default owner).
func (m *MemFS) OpenFileAs(name string, flag int, perm fs.FileMode, uid, gid int) (*File, error) {
	p := m.Abs(name)
	writable := flag&(os.O_WRONLY|os.O_RDWR) != 0
	m.mu.Lock()
	defer m.mu.Unlock()
	n, _, err := m.lookup("open", p, true)
	created := false
	switch {
	case err == nil && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, pathErr("open", p, syscall.EEXIST)
	case err == nil:
	case isErrno(err, syscall.ENOENT) && flag&os.O_CREATE != 0:
		n, err = m.createLocked(p, perm, uid, gid)
		if err != nil {
			return nil, err
		}
		created = true
	default:
		return nil, err
	}
	if n.isDir() && writable {
		return nil, pathErr("open", p, syscall.EISDIR)
	}
	if !created && (!m.may(n, openPerm(flag)) || flag&os.O_TRUNC != 0 && !m.may(n, permWrite)) {
		return nil, pathErr("open", p, syscall.EACCES)
	}
	if flag&os.O_TRUNC != 0 && writable && n.mode.IsRegular() {
		m.grow(n, -int64(len(n.data)))
		n.data = nil
		n.mtime = time.Now()
		if !created { // Linux skips the truncation (and its IN_MODIFY) of a file open(2) created
			m.emit(p, envdapi.EventTypeWrite)
		}
	}
	return &File{fs: m, n: n, name: p, flag: flag}, nil
}

// openPerm is the access an open(2) flag asks for.
func openPerm(flag int) fs.FileMode {
	switch flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR) {
	case os.O_WRONLY:
		return permWrite
	case os.O_RDWR:
		return permRead | permWrite
	}
	return permRead
}

// createLocked makes an empty regular file at p. A dangling symlink at p is
// followed to create its target, like open(2).
func (m *MemFS) createLocked(p string, perm fs.FileMode, uid, gid int) (*node, error) {
	for range maxSymlinkHops {
		dir, dirPath, base, err := m.parentOf("open", p)
		if err != nil {
			return nil, err
		}
		if l, ok := dir.children[base]; ok && l.isSymlink() {
			t := l.target
			if !path.IsAbs(t) {
				t = path.Join(dirPath, t)
			}
			p = path.Clean(t)
			continue
		}
		if !m.may(dir, permWrite|permExec) {
			return nil, pathErr("open", p, syscall.EACCES)
		}
		if uid < 0 && m.cred != nil {
			uid, gid = m.cred.uid, m.cred.gid
		}
		n := m.newNode(perm.Perm()&^umask, uid, gid)
		dir.children[base] = n
		dir.mtime = n.mtime
		m.emit(path.Join(dirPath, base), envdapi.EventTypeCreate)
		return n, nil
	}
	return nil, pathErr("open", p, syscall.ELOOP)
}

// Name returns the absolute path the file was opened with.
func (f *File) Name() string { return f.name }

// Stat describes the open entry.
func (f *File) Stat() (fs.FileInfo, error) {
	f.fs.mu.RLock()
	defer f.fs.mu.RUnlock()
	return newFileInfo(path.Base(f.name), f.n), nil
}

// Read reads from the current offset.
func (f *File) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.readAt(p, f.off)
	f.off += int64(n)
	return n, err
}

// ReadAt reads at off without moving the offset.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	n, err := f.readAt(p, off)
	f.mu.Unlock()
	if err == nil && n < len(p) {
		err = io.EOF
	}
	return n, err
}

func (f *File) readAt(p []byte, off int64) (int, error) {
	if f.closed {
		return 0, pathErr("read", f.name, syscall.EBADF)
	}
	if f.flag&os.O_WRONLY != 0 {
		return 0, pathErr("read", f.name, syscall.EBADF)
	}
	switch f.n.dev {
	case devNull:
		return 0, io.EOF
	case devZero:
		clear(p)
		return len(p), nil
	case devRandom:
		return rand.Read(p)
	}
	f.fs.mu.RLock()
	defer f.fs.mu.RUnlock()
	if f.n.isDir() {
		return 0, pathErr("read", f.name, syscall.EISDIR)
	}
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	return copy(p, f.n.data[off:]), nil
}

// Write writes at the current offset (or at the end with O_APPEND). When
// the quota runs out it writes what fits and fails with ENOSPC.
func (f *File) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || f.flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return 0, pathErr("write", f.name, syscall.EBADF)
	}
	if f.n.dev != devNone {
		return len(p), nil
	}
	m := f.fs
	m.mu.Lock()
	defer m.mu.Unlock()
	n := f.n
	if f.flag&os.O_APPEND != 0 {
		f.off = int64(len(n.data))
	}
	end := f.off + int64(len(p))
	var err error
	if grow := end - int64(len(n.data)); grow > 0 && !m.grow(n, grow) {
		fit := max(m.room()-max(f.off-int64(len(n.data)), 0), 0)
		p = p[:min(int64(len(p)), fit)]
		end = f.off + int64(len(p))
		err = pathErr("write", f.name, syscall.ENOSPC)
		if grow := end - int64(len(n.data)); grow > 0 && !m.grow(n, grow) {
			return 0, err
		}
	}
	if end > int64(len(n.data)) {
		if end <= int64(cap(n.data)) {
			n.data = n.data[:end]
		} else {
			n.data = append(n.data[:cap(n.data)], make([]byte, end-int64(cap(n.data)))...)
		}
	}
	copy(n.data[f.off:], p)
	f.off = end
	n.mtime = time.Now()
	if len(p) > 0 {
		m.emit(f.name, envdapi.EventTypeWrite)
	}
	return len(p), err
}

// Seek sets the offset for the next Read or Write.
func (f *File) Seek(offset int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var base int64
	switch whence {
	case io.SeekCurrent:
		base = f.off
	case io.SeekEnd:
		f.fs.mu.RLock()
		base = int64(len(f.n.data))
		f.fs.mu.RUnlock()
	}
	if base+offset < 0 {
		return 0, pathErr("seek", f.name, syscall.EINVAL)
	}
	f.off = base + offset
	return f.off, nil
}

// Close releases the handle; later calls fail with EBADF.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return pathErr("close", f.name, syscall.EBADF)
	}
	f.closed = true
	return nil
}
