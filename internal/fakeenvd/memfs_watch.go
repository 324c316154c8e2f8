package fakeenvd

import (
	"path"
	"sync"
	"sync/atomic"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// watchQueue is how many events a watch holds before it overflows, like
// the kernel's inotify queue (which envd's fsnotify watches read).
const watchQueue = 4096

// fsChange is one change in the tree: the absolute path and what happened,
// as inotify reports it (fsnotify's Create, Write, Remove, Rename, Chmod).
type fsChange struct {
	path string
	op   envdapi.EventType
}

// fsWatch receives every change of a MemFS until cancelled. When its queue
// fills it is marked overflowed and receives nothing more.
type fsWatch struct {
	ch       chan fsChange
	overflow chan struct{} // closed on overflow
}

// watchHub fans changes out to the watches. It has its own lock, so the
// tree can emit while holding MemFS.mu.
type watchHub struct {
	mu      sync.Mutex
	watches map[*fsWatch]struct{}
	n       atomic.Int32 // len(watches), read without the lock
}

// Watch starts receiving changes; cancel stops it.
func (m *MemFS) Watch() (w *fsWatch, cancel func()) {
	w = &fsWatch{ch: make(chan fsChange, watchQueue), overflow: make(chan struct{})}
	h := &m.hub
	h.mu.Lock()
	if h.watches == nil {
		h.watches = map[*fsWatch]struct{}{}
	}
	h.watches[w] = struct{}{}
	h.n.Store(int32(len(h.watches)))
	h.mu.Unlock()
	return w, func() {
		h.mu.Lock()
		delete(h.watches, w)
		h.n.Store(int32(len(h.watches)))
		h.mu.Unlock()
	}
}

// emit reports a change at the absolute path p to every watch, never
// blocking.
func (m *MemFS) emit(p string, op envdapi.EventType) {
	h := &m.hub
	if h.n.Load() == 0 {
		return // the common case: nobody watches
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.watches {
		select {
		case w.ch <- fsChange{path: path.Clean(p), op: op}:
		default:
			close(w.overflow)
			delete(h.watches, w)
			h.n.Store(int32(len(h.watches)))
		}
	}
}

// emitTree reports the removal of n at p and, first, of everything below
// it, as inotify reports each entry of a removed tree.
func (m *MemFS) emitTree(p string, n *node) {
	for name, c := range n.children {
		m.emitTree(path.Join(p, name), c)
	}
	m.emit(p, envdapi.EventTypeRemove)
}
