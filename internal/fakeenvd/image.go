package fakeenvd

import (
	"maps"
	"slices"
)

// An Image is a copy of a daemon's files, taken by [Daemon.Image] and laid
// into another daemon by [Daemon.Restore]: what a fork or a snapshot of a
// sandbox carries over in the fake (the platform also carries memory, so
// running processes; the fake does not).
type Image struct {
	root *node
	used int64
}

// Image copies the daemon's file tree.
func (d *Daemon) Image() *Image {
	d.mem.mu.RLock()
	defer d.mem.mu.RUnlock()
	return &Image{root: copyNode(d.mem.root), used: d.mem.used}
}

// Restore replaces the daemon's file tree with a copy of img, keeping the
// daemon's own identity files in /run/e2b (it is another sandbox).
func (d *Daemon) Restore(img *Image) {
	d.mem.mu.Lock()
	d.mem.root = copyNode(img.root)
	d.mem.used = img.used
	d.mem.mu.Unlock()
	_ = populateRunDir(d.mem, d.cfg)
}

// copyNode deep-copies a subtree.
func copyNode(n *node) *node {
	c := *n
	c.data = slices.Clone(n.data)
	c.meta = maps.Clone(n.meta)
	if n.children != nil {
		c.children = make(map[string]*node, len(n.children))
		for name, child := range n.children {
			c.children[name] = copyNode(child)
		}
	}
	return &c
}
