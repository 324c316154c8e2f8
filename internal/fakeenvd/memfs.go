package fakeenvd

import (
	"io/fs"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"
)

// maxSymlinkHops bounds symlink resolution, like Linux's ELOOP limit.
const maxSymlinkHops = 40

// umask is applied to the permissions of every created entry.
const umask fs.FileMode = 0o022

// dirSize is the size reported for directories (one ext4 block).
const dirSize = 4096

// devKind tells what a character-device node does.
type devKind uint8

const (
	devNone devKind = iota
	devNull
	devZero
	devRandom
)

// node is one entry of the tree. Its name lives in the parent's map.
type node struct {
	mode     fs.FileMode // type bits and permissions
	data     []byte      // regular file contents
	target   string      // symlink target
	children map[string]*node
	mtime    time.Time
	uid, gid int
	dev      devKind
	linked   bool              // false once removed from the tree (open handles may remain)
	meta     map[string]string // user metadata, like envd's user.e2b.* xattrs
}

func (n *node) isDir() bool     { return n.mode.IsDir() }
func (n *node) isSymlink() bool { return n.mode&fs.ModeSymlink != 0 }

// size is the size that stat reports.
func (n *node) size() int64 {
	switch {
	case n.isDir():
		return dirSize
	case n.isSymlink():
		return int64(len(n.target))
	default:
		return int64(len(n.data))
	}
}

// MemFS is an in-memory POSIX-like file tree: directories, regular files,
// symbolic links and a few character devices, with modes, owners, mtimes and
// a byte quota on file contents. Paths are slash-separated; relative paths
// are resolved against the home directory. All methods are safe for
// concurrent use. Errors are *fs.PathError values wrapping syscall.Errno
// (ENOENT, EEXIST, ENOTDIR, EISDIR, ENOTEMPTY, ENOSPC, ELOOP, EINVAL, …), so
// errors.Is(err, fs.ErrNotExist) and friends work.
type MemFS struct {
	*memTree
	// cred is the user whose permissions every operation checks, as the
	// kernel checks a process's; nil for envd itself, which runs as root
	// and checks nothing (infra packages/envd: /files and the filesystem
	// RPCs open paths as root, then chown to the requesting user).
	cred *credential
}

// memTree is the tree and its accounting, shared by every view of a MemFS.
type memTree struct {
	mu    sync.RWMutex
	root  *node
	home  string
	quota int64
	used  int64
	uid   int // owner of entries created without an explicit owner
	gid   int
	hub   watchHub
}

// credential is a non-root user's ids.
type credential struct{ uid, gid int }

// NewMemFS returns an empty tree (only "/", owned by root) that resolves
// relative paths against home, owns new entries by uid/gid and limits file
// contents to quota bytes (<= 0 means no limit).
func NewMemFS(home string, uid, gid int, quota int64) *MemFS {
	return &MemFS{memTree: &memTree{
		root: &node{mode: fs.ModeDir | 0o755, children: map[string]*node{}, mtime: time.Now(), linked: true},
		home: path.Clean("/" + home), quota: quota, uid: uid, gid: gid,
	}}
}

// As returns a view of the same tree whose operations are checked against
// the permissions of uid/gid, as Linux checks a process running as that
// user: search (x) on every directory walked, read or write on the file
// opened, write and search on the directory whose entries change, the
// sticky bit, and ownership for chmod, chown and utimes. uid 0 (root) is
// checked for nothing.
func (m *MemFS) As(uid, gid int) *MemFS {
	if uid == 0 {
		return &MemFS{memTree: m.memTree}
	}
	return &MemFS{memTree: m.memTree, cred: &credential{uid: uid, gid: gid}}
}

// Permission bits asked of may.
const (
	permRead  fs.FileMode = 4
	permWrite fs.FileMode = 2
	permExec  fs.FileMode = 1
)

// may reports whether the view's user has all of want (permRead,
// permWrite, permExec) on n: the owner's bits for its owner, the group's
// for its group, the others' otherwise.
func (m *MemFS) may(n *node, want fs.FileMode) bool {
	if m.cred == nil {
		return true
	}
	perm := n.mode.Perm()
	switch {
	case n.uid == m.cred.uid:
		perm >>= 6
	case n.gid == m.cred.gid:
		perm >>= 3
	}
	return perm&want == want
}

// mayChangeEntry reports whether the user may remove or rename child of
// dir: write and search on dir and, when dir is sticky (/tmp), ownership
// of child or dir.
func (m *MemFS) mayChangeEntry(dir, child *node) bool {
	if !m.may(dir, permWrite|permExec) {
		return false
	}
	return m.cred == nil || dir.mode&fs.ModeSticky == 0 || child.uid == m.cred.uid || dir.uid == m.cred.uid
}

// owns reports whether the user owns n (root owns everything).
func (m *MemFS) owns(n *node) bool { return m.cred == nil || n.uid == m.cred.uid }

// Abs returns the clean absolute form of name: relative names are joined to
// the home directory.
func (m *MemFS) Abs(name string) string {
	if !path.IsAbs(name) {
		name = path.Join(m.home, name)
	}
	return path.Clean(name)
}

// Usage reports the bytes of file contents stored and the quota.
func (m *MemFS) Usage() (used, quota int64) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.used, m.quota
}

func pathErr(op, name string, errno syscall.Errno) error {
	return &fs.PathError{Op: op, Path: name, Err: errno}
}

// splitPath splits a clean absolute path into its components.
func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// resolve walks the clean absolute path p and returns its node and the
// path with every symlink resolved. Symlinks in the final component are
// followed only when followLast is set. The caller holds m.mu.
func (m *MemFS) resolve(op, p string, followLast bool, hops *int) (*node, string, error) {
	cur, curPath := m.root, "/"
	comps := splitPath(p)
	for i, c := range comps {
		if !cur.isDir() {
			return nil, "", pathErr(op, p, syscall.ENOTDIR)
		}
		if !m.may(cur, permExec) {
			return nil, "", pathErr(op, p, syscall.EACCES)
		}
		child, ok := cur.children[c]
		if !ok {
			return nil, "", pathErr(op, p, syscall.ENOENT)
		}
		last := i == len(comps)-1
		if child.isSymlink() && (!last || followLast) {
			*hops++
			if *hops > maxSymlinkHops {
				return nil, "", pathErr(op, p, syscall.ELOOP)
			}
			target := child.target
			if !path.IsAbs(target) {
				target = path.Join(curPath, target)
			}
			n, real, err := m.resolve(op, path.Clean(target), true, hops)
			if err != nil {
				if pe, ok := err.(*fs.PathError); ok {
					pe.Path = p
				}
				return nil, "", err
			}
			cur, curPath = n, real
			continue
		}
		cur, curPath = child, path.Join(curPath, c)
	}
	return cur, curPath, nil
}

// lookup resolves name (made absolute) and returns the node and its
// resolved path. The caller holds m.mu.
func (m *MemFS) lookup(op, name string, follow bool) (*node, string, error) {
	hops := 0
	return m.resolve(op, m.Abs(name), follow, &hops)
}

// parentOf resolves the directory that holds name and returns it with the
// final component. The caller holds m.mu.
func (m *MemFS) parentOf(op, name string) (dir *node, dirPath, base string, err error) {
	p := m.Abs(name)
	if p == "/" {
		return nil, "", "", pathErr(op, p, syscall.EBUSY)
	}
	hops := 0
	dir, dirPath, err = m.resolve(op, path.Dir(p), true, &hops)
	if err != nil {
		if pe, ok := err.(*fs.PathError); ok {
			pe.Path = p
		}
		return nil, "", "", err
	}
	if !dir.isDir() {
		return nil, "", "", pathErr(op, p, syscall.ENOTDIR)
	}
	return dir, dirPath, path.Base(p), nil
}

// newNode builds an entry owned by the given ids (negative = the default).
func (m *MemFS) newNode(mode fs.FileMode, uid, gid int) *node {
	if uid < 0 {
		uid = m.uid
	}
	if gid < 0 {
		gid = m.gid
	}
	n := &node{mode: mode, mtime: time.Now(), uid: uid, gid: gid, linked: true}
	if mode.IsDir() {
		n.children = map[string]*node{}
	}
	return n
}

// grow accounts delta more bytes of contents; it fails with ENOSPC when the
// quota would be exceeded. The caller holds m.mu for writing.
func (m *MemFS) grow(n *node, delta int64) bool {
	if !n.linked || delta <= 0 {
		if n.linked {
			m.used += delta
		}
		return true
	}
	if m.quota > 0 && m.used+delta > m.quota {
		return false
	}
	m.used += delta
	return true
}

// room returns how many more content bytes fit under the quota.
func (m *MemFS) room() int64 {
	if m.quota <= 0 {
		return 1<<63 - 1
	}
	return max(m.quota-m.used, 0)
}

// unlink detaches a subtree and releases its bytes. The caller holds m.mu.
func (m *MemFS) unlink(n *node) {
	n.linked = false
	if n.mode.IsRegular() {
		m.used -= int64(len(n.data))
	}
	for _, c := range n.children {
		m.unlink(c)
	}
}
