package fakeenvd

import (
	"io/fs"
	"maps"
	"syscall"
	"time"
)

// fileInfo is a snapshot of a node. Its Sys is a *syscall.Stat_t carrying
// the owner ids, because mvdan.cc/sh's [[ -O ]] and [[ -G ]] assert that type
// unchecked.
type fileInfo struct {
	name     string
	size     int64
	mode     fs.FileMode
	mtime    time.Time
	uid, gid int
	target   string
	meta     map[string]string
}

// newFileInfo snapshots n under the name base. The caller holds the lock.
func newFileInfo(base string, n *node) *fileInfo {
	return &fileInfo{
		name: base, size: n.size(), mode: n.mode, mtime: n.mtime,
		uid: n.uid, gid: n.gid, target: n.target, meta: maps.Clone(n.meta),
	}
}

func (fi *fileInfo) Name() string       { return fi.name }
func (fi *fileInfo) Size() int64        { return fi.size }
func (fi *fileInfo) Mode() fs.FileMode  { return fi.mode }
func (fi *fileInfo) ModTime() time.Time { return fi.mtime }
func (fi *fileInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi *fileInfo) Sys() any {
	return &syscall.Stat_t{Uid: uint32(fi.uid), Gid: uint32(fi.gid)}
}

// ownerIDs returns the owner ids recorded in info (0, 0 when unknown).
func ownerIDs(info fs.FileInfo) (uid, gid int) {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid)
	}
	return 0, 0
}

// metadataOf returns the user metadata recorded in info (nil when none).
func metadataOf(info fs.FileInfo) map[string]string {
	if fi, ok := info.(*fileInfo); ok && len(fi.meta) > 0 {
		return maps.Clone(fi.meta)
	}
	return nil
}
