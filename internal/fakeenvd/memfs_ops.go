package fakeenvd

import (
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// Stat describes name, following symlinks.
func (m *MemFS) Stat(name string) (fs.FileInfo, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, _, err := m.lookup("stat", name, true)
	if err != nil {
		return nil, err
	}
	return newFileInfo(path.Base(m.Abs(name)), n), nil
}

// Lstat describes name without following a final symlink.
func (m *MemFS) Lstat(name string) (fs.FileInfo, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, _, err := m.lookup("lstat", name, false)
	if err != nil {
		return nil, err
	}
	return newFileInfo(path.Base(m.Abs(name)), n), nil
}

// RealPath resolves every symlink in name and returns the canonical path.
func (m *MemFS) RealPath(name string) (string, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, real, err := m.lookup("realpath", name, true)
	return real, err
}

// ReadDir lists the directory name (following symlinks), sorted by name.
func (m *MemFS) ReadDir(name string) ([]fs.DirEntry, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, _, err := m.lookup("readdirent", name, true)
	if err != nil {
		return nil, err
	}
	if !n.isDir() {
		return nil, pathErr("readdirent", m.Abs(name), syscall.ENOTDIR)
	}
	if !m.may(n, permRead) {
		return nil, pathErr("open", m.Abs(name), syscall.EACCES)
	}
	names := make([]string, 0, len(n.children))
	for k := range n.children {
		names = append(names, k)
	}
	slices.Sort(names)
	out := make([]fs.DirEntry, len(names))
	for i, k := range names {
		out[i] = fs.FileInfoToDirEntry(newFileInfo(k, n.children[k]))
	}
	return out, nil
}

// Mkdir creates one directory; the parent must exist.
func (m *MemFS) Mkdir(name string, perm fs.FileMode) error {
	return m.MkdirAs(name, perm, -1, -1)
}

// MkdirAs is Mkdir with the directory owned by uid/gid (negative values
// mean the default owner).
func (m *MemFS) MkdirAs(name string, perm fs.FileMode, uid, gid int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mkdirLocked(name, perm, uid, gid)
}

func (m *MemFS) mkdirLocked(name string, perm fs.FileMode, uid, gid int) error {
	dir, dirPath, base, err := m.parentOf("mkdir", name)
	if err != nil {
		return err
	}
	if _, ok := dir.children[base]; ok {
		return pathErr("mkdir", m.Abs(name), syscall.EEXIST)
	}
	if !m.may(dir, permWrite|permExec) {
		return pathErr("mkdir", m.Abs(name), syscall.EACCES)
	}
	if uid < 0 && m.cred != nil {
		uid, gid = m.cred.uid, m.cred.gid
	}
	dir.children[base] = m.newNode(fs.ModeDir|(perm.Perm()&^umask), uid, gid)
	dir.mtime = time.Now()
	m.emit(path.Join(dirPath, base), envdapi.EventTypeCreate)
	return nil
}

// MkdirAll creates name and any missing parents; existing directories are
// fine, an existing non-directory fails with ENOTDIR (or EEXIST for name).
func (m *MemFS) MkdirAll(name string, perm fs.FileMode) error {
	return m.MkdirAllAs(name, perm, -1, -1)
}

// MkdirAllAs is MkdirAll with created directories owned by uid/gid
// (negative values mean the default owner).
func (m *MemFS) MkdirAllAs(name string, perm fs.FileMode, uid, gid int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.Abs(name)
	comps := splitPath(p)
	for i := range comps {
		sub := "/" + strings.Join(comps[:i+1], "/")
		n, _, err := m.lookup("mkdir", sub, true)
		switch {
		case err == nil && n.isDir():
			continue
		case err == nil && i == len(comps)-1:
			return pathErr("mkdir", p, syscall.EEXIST)
		case err == nil:
			return pathErr("mkdir", p, syscall.ENOTDIR)
		case !isErrno(err, syscall.ENOENT):
			return err
		}
		if err := m.mkdirLocked(sub, perm, uid, gid); err != nil {
			return err
		}
	}
	return nil
}

// Remove deletes a file, a symlink or an empty directory.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, dirPath, base, err := m.parentOf("remove", name)
	if err != nil {
		return err
	}
	n, ok := dir.children[base]
	if !ok {
		return pathErr("remove", m.Abs(name), syscall.ENOENT)
	}
	if n.isDir() && len(n.children) > 0 {
		return pathErr("remove", m.Abs(name), syscall.ENOTEMPTY)
	}
	if !m.mayChangeEntry(dir, n) {
		return pathErr("remove", m.Abs(name), syscall.EACCES)
	}
	delete(dir.children, base)
	dir.mtime = time.Now()
	m.unlink(n)
	m.emit(path.Join(dirPath, base), envdapi.EventTypeRemove)
	return nil
}

// RemoveAll deletes name and everything below it. A missing name is not an
// error; "/" cannot be removed (EBUSY).
func (m *MemFS) RemoveAll(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, dirPath, base, err := m.parentOf("unlinkat", name)
	if err != nil {
		if isErrno(err, syscall.ENOENT) || isErrno(err, syscall.ENOTDIR) {
			return nil
		}
		return err
	}
	n, ok := dir.children[base]
	if !ok {
		return nil
	}
	if err := m.mayRemoveTree(path.Join(dirPath, base), dir, n); err != nil {
		return err
	}
	delete(dir.children, base)
	dir.mtime = time.Now()
	m.emitTree(path.Join(dirPath, base), n)
	m.unlink(n)
	return nil
}

// mayRemoveTree checks that the user may remove n from dir and, for a
// directory, read, search and empty it and everything below (rm -r as
// that user: it stops at the first entry it may not remove).
func (m *MemFS) mayRemoveTree(p string, dir, n *node) error {
	if !m.mayChangeEntry(dir, n) {
		return pathErr("unlinkat", p, syscall.EACCES)
	}
	if !n.isDir() || len(n.children) == 0 {
		return nil
	}
	if !m.may(n, permRead|permExec) {
		return pathErr("open", p, syscall.EACCES)
	}
	for name, c := range n.children {
		if err := m.mayRemoveTree(path.Join(p, name), n, c); err != nil {
			return err
		}
	}
	return nil
}

// Rename moves oldname to newname with rename(2) semantics: a file replaces
// a file, a directory replaces an empty directory, a directory cannot move
// below itself, and the parent of newname must exist.
func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	odir, odirPath, obase, err := m.parentOf("rename", oldname)
	if err != nil {
		return err
	}
	n, ok := odir.children[obase]
	if !ok {
		return &os.LinkError{Op: "rename", Old: m.Abs(oldname), New: m.Abs(newname), Err: syscall.ENOENT}
	}
	ndir, ndirPath, nbase, err := m.parentOf("rename", newname)
	if err != nil {
		return err
	}
	linkErr := func(errno syscall.Errno) error {
		return &os.LinkError{Op: "rename", Old: m.Abs(oldname), New: m.Abs(newname), Err: errno}
	}
	src := path.Join(odirPath, obase)
	dst := path.Join(ndirPath, nbase)
	if !m.mayChangeEntry(odir, n) || !m.may(ndir, permWrite|permExec) {
		return linkErr(syscall.EACCES)
	}
	if old, ok := ndir.children[nbase]; ok && !m.mayChangeEntry(ndir, old) {
		return linkErr(syscall.EACCES)
	}
	if src == dst {
		return nil
	}
	if n.isDir() && strings.HasPrefix(dst+"/", src+"/") {
		return linkErr(syscall.EINVAL)
	}
	if old, ok := ndir.children[nbase]; ok {
		switch {
		case n.isDir() && !old.isDir():
			return linkErr(syscall.ENOTDIR)
		case !n.isDir() && old.isDir():
			return linkErr(syscall.EISDIR)
		case old.isDir() && len(old.children) > 0:
			return linkErr(syscall.ENOTEMPTY)
		}
		m.unlink(old)
	}
	delete(odir.children, obase)
	ndir.children[nbase] = n
	now := time.Now()
	odir.mtime, ndir.mtime = now, now
	m.emit(src, envdapi.EventTypeRename)
	m.emit(dst, envdapi.EventTypeCreate)
	return nil
}

// Symlink creates newname as a symbolic link to target.
func (m *MemFS) Symlink(target, newname string) error {
	return m.SymlinkAs(target, newname, -1, -1)
}

// SymlinkAs is Symlink with the link owned by uid/gid (negative values
// mean the default owner).
func (m *MemFS) SymlinkAs(target, newname string, uid, gid int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, dirPath, base, err := m.parentOf("symlink", newname)
	if err != nil {
		return err
	}
	if _, ok := dir.children[base]; ok {
		return pathErr("symlink", m.Abs(newname), syscall.EEXIST)
	}
	if !m.may(dir, permWrite|permExec) {
		return pathErr("symlink", m.Abs(newname), syscall.EACCES)
	}
	if uid < 0 && m.cred != nil {
		uid, gid = m.cred.uid, m.cred.gid
	}
	n := m.newNode(fs.ModeSymlink|0o777, uid, gid)
	n.target = target
	dir.children[base] = n
	dir.mtime = time.Now()
	m.emit(path.Join(dirPath, base), envdapi.EventTypeCreate)
	return nil
}

// Readlink returns the target of the symlink name.
func (m *MemFS) Readlink(name string) (string, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, _, err := m.lookup("readlink", name, false)
	if err != nil {
		return "", err
	}
	if !n.isSymlink() {
		return "", pathErr("readlink", m.Abs(name), syscall.EINVAL)
	}
	return n.target, nil
}

// Chmod sets the permission bits (and sticky/setuid/setgid) of name.
func (m *MemFS) Chmod(name string, mode fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, p, err := m.lookup("chmod", name, true)
	if err != nil {
		return err
	}
	if !m.owns(n) {
		return pathErr("chmod", m.Abs(name), syscall.EPERM)
	}
	keep := fs.ModeType | fs.ModeCharDevice
	n.mode = n.mode&keep | mode&(fs.ModePerm|fs.ModeSticky|fs.ModeSetuid|fs.ModeSetgid)
	m.emit(p, envdapi.EventTypeChmod)
	return nil
}

// SetMetadata replaces the user metadata of name (following symlinks), as
// envd rewrites a file's user.e2b.* xattrs on every upload; nil or empty
// clears it.
func (m *MemFS) SetMetadata(name string, meta map[string]string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, p, err := m.lookup("setxattr", name, true)
	if err != nil {
		return err
	}
	if !m.may(n, permWrite) {
		return pathErr("setxattr", m.Abs(name), syscall.EACCES)
	}
	if len(meta) == 0 && len(n.meta) == 0 {
		return nil // no xattr to write or remove, so no event
	}
	if len(meta) == 0 {
		n.meta = nil
	} else {
		n.meta = maps.Clone(meta)
	}
	m.emit(p, envdapi.EventTypeChmod) // inotify reports xattr changes as IN_ATTRIB
	return nil
}

// Chown sets the owner ids of name.
func (m *MemFS) Chown(name string, uid, gid int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, p, err := m.lookup("chown", name, true)
	if err != nil {
		return err
	}
	// Only root may give a file away; an owner may only keep its ids.
	if m.cred != nil && (uid != n.uid || gid != n.gid && gid != m.cred.gid || !m.owns(n)) {
		return pathErr("chown", m.Abs(name), syscall.EPERM)
	}
	n.uid, n.gid = uid, gid
	m.emit(p, envdapi.EventTypeChmod)
	return nil
}

// Chtimes sets the modification time of name.
func (m *MemFS) Chtimes(name string, mtime time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, p, err := m.lookup("chtimes", name, true)
	if err != nil {
		return err
	}
	if !m.owns(n) && !m.may(n, permWrite) {
		return pathErr("chtimes", m.Abs(name), syscall.EACCES)
	}
	n.mtime = mtime
	m.emit(p, envdapi.EventTypeChmod)
	return nil
}

// ReadFile returns the contents of the regular file name.
func (m *MemFS) ReadFile(name string) ([]byte, error) {
	f, err := m.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// WriteFile creates or truncates name and writes data to it.
func (m *MemFS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	f, err := m.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr != nil {
		return werr
	}
	return cerr
}

// mknod creates a character device node (for /dev/null and friends).
func (m *MemFS) mknod(name string, dev devKind) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, _, base, err := m.parentOf("mknod", name)
	if err != nil {
		return err
	}
	n := m.newNode(fs.ModeDevice|fs.ModeCharDevice|0o666, 0, 0)
	n.dev = dev
	dir.children[base] = n
	return nil
}

// isErrno reports whether err wraps the given errno.
func isErrno(err error, errno syscall.Errno) bool { return errors.Is(err, errno) }
