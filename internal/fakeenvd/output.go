package fakeenvd

import (
	"sync"
	"time"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// Output coalescing: shell commands write in tiny pieces (echo a b makes
// four writes), so bytes are gathered and flushed as one data event after
// flushDelay or once maxChunk bytes are waiting (envd reads 32 KiB chunks).
const (
	flushDelay     = 10 * time.Millisecond
	maxChunk       = 32 << 10
	subscriberSlot = 64 // events buffered per subscriber
)

// outputHub fans a process's events out to its current subscribers (the
// Start stream and any Connect streams). Data events wait for slow
// subscribers — that back-pressure is what paces a process that prints a
// lot — unless the subscriber leaves or the process is killed. Without
// subscribers data is dropped, as envd does for a process nobody watches.
type outputHub struct {
	mu     sync.Mutex
	subs   map[*subscription]struct{}
	end    *envdapi.ProcessEvent
	killed <-chan struct{} // closed when the process is signalled
	abort  <-chan struct{} // closed when the daemon closes
}

func newOutputHub(killed, abort <-chan struct{}) *outputHub {
	return &outputHub{subs: map[*subscription]struct{}{}, killed: killed, abort: abort}
}

// subscription receives the events published after it was made; its
// channel is closed after the end event.
type subscription struct {
	ch   chan envdapi.ProcessEvent
	gone chan struct{}
	once sync.Once
	hub  *outputHub
}

// subscribe starts receiving events; after the end it yields only the end.
func (h *outputHub) subscribe() *subscription {
	s := &subscription{ch: make(chan envdapi.ProcessEvent, subscriberSlot), gone: make(chan struct{}), hub: h}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.end != nil {
		s.ch <- *h.end
		close(s.ch)
		return s
	}
	h.subs[s] = struct{}{}
	return s
}

// cancel stops the subscription; pending sends to it are abandoned.
func (s *subscription) cancel() {
	s.once.Do(func() {
		close(s.gone)
		s.hub.mu.Lock()
		delete(s.hub.subs, s)
		s.hub.mu.Unlock()
	})
}

func (h *outputHub) snapshot() []*subscription {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*subscription, 0, len(h.subs))
	for s := range h.subs {
		out = append(out, s)
	}
	return out
}

// publish delivers a data event. Calls are serialised by the coalescer.
func (h *outputHub) publish(ev envdapi.ProcessEvent) {
	for _, s := range h.snapshot() {
		select {
		case s.ch <- ev:
			continue
		default:
		}
		select {
		case s.ch <- ev:
		case <-s.gone:
		case <-h.killed:
		case <-h.abort:
		}
	}
}

// finish delivers the end event and closes every subscription. It is
// called once, after the coalescer is closed.
func (h *outputHub) finish(ev envdapi.ProcessEvent) {
	h.mu.Lock()
	h.end = &ev
	subs := make([]*subscription, 0, len(h.subs))
	for s := range h.subs {
		subs = append(subs, s)
	}
	clear(h.subs)
	h.mu.Unlock()
	for _, s := range subs {
		select {
		case s.ch <- ev:
		default:
			select {
			case s.ch <- ev:
			case <-s.gone:
			case <-h.abort:
			}
		}
		close(s.ch)
	}
}

// streamKind tells stdout from stderr.
type streamKind uint8

const (
	kindStdout streamKind = iota
	kindStderr
	kindPty
)

// coalescer gathers a process's output into data events.
type coalescer struct {
	mu     sync.Mutex
	hub    *outputHub
	kind   streamKind
	buf    []byte
	armed  bool // a timed flush is pending
	closed bool
}

// write appends p to the pending chunk, flushing full chunks and on a
// change of stream; it never fails (output after the end is dropped).
func (c *coalescer) write(kind streamKind, p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	if c.closed {
		return n, nil
	}
	if len(c.buf) > 0 && c.kind != kind {
		c.flushLocked()
	}
	c.kind = kind
	for len(p) > 0 {
		if c.buf == nil {
			c.buf = make([]byte, 0, min(maxChunk, max(len(p), 512)))
		}
		take := min(maxChunk-len(c.buf), len(p))
		c.buf = append(c.buf, p[:take]...)
		p = p[take:]
		if len(c.buf) >= maxChunk {
			c.flushLocked()
		}
	}
	if len(c.buf) > 0 && !c.armed {
		c.armed = true
		time.AfterFunc(flushDelay, c.timedFlush)
	}
	return n, nil
}

func (c *coalescer) timedFlush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed = false
	c.flushLocked()
}

// flushLocked publishes the pending chunk; the caller holds c.mu, so
// writers wait while a slow subscriber catches up.
func (c *coalescer) flushLocked() {
	if len(c.buf) == 0 || c.closed {
		return
	}
	data := c.buf
	c.buf = nil
	ev := envdapi.ProcessEvent{Data: &envdapi.DataEvent{}}
	switch c.kind {
	case kindStderr:
		ev.Data.Stderr = data
	case kindPty:
		ev.Data.Pty = data
	default:
		ev.Data.Stdout = data
	}
	c.hub.publish(ev)
}

// close flushes what is pending and drops any later output.
func (c *coalescer) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushLocked()
	c.closed = true
}

// streamWriter is the io.Writer of one stream of a coalescer.
type streamWriter struct {
	c    *coalescer
	kind streamKind
}

func (w streamWriter) Write(p []byte) (int, error) { return w.c.write(w.kind, p) }
