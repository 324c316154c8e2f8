package server

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

// registry holds the state of every live legacy session, keyed by the
// SDK's *mcp.ServerSession (its ID is "" on stdio), and runs what their
// closes leave to do. The HTTP session caps are its httpCaps, under their
// own lock. Modern requests never reach it (MODERN-1).
type registry struct {
	deps  *Deps
	sem   chan struct{} // bounds close-time destroys across the server
	state *cleanupState
	http  *httpCaps

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*session
	shutdown bool
	seq      uint64

	cleanups tracker // close-time destroys and create checks in flight
	destroys tracker // the close-time destroys alone: what a connection's Run waits for
	watchers tracker // one per session, until ss.Wait returns

	createsMu sync.Mutex
	creates   map[string]int // creates in flight per principal
}

func newRegistry(deps *Deps) *registry {
	r := &registry{deps: deps, sem: make(chan struct{}, deps.Limits.DestroyConcurrency), state: newCleanupState(),
		sessions: map[*mcp.ServerSession]*session{}, creates: map[string]int{}}
	r.http = newHTTPCaps(deps.Now, deps.Logger, func(s *session) {
		go func() {
			r.end(s)
			_ = s.ss.Close()
		}()
	})
	return r
}

// attach returns the record of ss, creating it on the session's first
// request and starting the goroutine that closes it when ss ends. A session
// that starts after shutdown began is closed from the outset.
func (r *registry) attach(ss *mcp.ServerSession) *session {
	r.mu.Lock()
	if s, ok := r.sessions[ss]; ok {
		r.mu.Unlock()
		return s
	}
	r.seq++
	s := newSession(r.seq)
	s.reg = r
	s.ss = ss
	s.httpID = ss.ID()
	r.sessions[ss] = s
	closed := r.shutdown
	r.watchers.add()
	r.mu.Unlock()
	if s.httpID != "" {
		r.http.add(s.httpID, s)
	}

	if closed {
		r.end(s)
	}
	go func() {
		defer r.watchers.done()
		_ = ss.Wait()
		r.end(s)
		r.mu.Lock()
		delete(r.sessions, ss)
		r.mu.Unlock()
		if s.httpID != "" {
			r.http.remove(s.httpID, s)
		}
	}()
	return s
}

// lookup returns the record of ss, if it has one.
func (r *registry) lookup(ss *mcp.ServerSession) (*session, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sessions[ss]
	return s, ok
}

// liveSessions is the number of session records (for tests).
func (r *registry) liveSessions() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sessions)
}

// end closes a session and destroys every sandbox it owns, concurrently and
// in the background (SESSION-1). It is idempotent.
func (r *registry) end(s *session) {
	owned, cmds, first := s.close()
	if !first {
		<-s.ended
		return
	}
	defer close(s.ended)
	for _, c := range cmds {
		c.release()
	}
	r.deps.Logger.Info("session closed", "session", s.seq, "destroy", len(owned))
	for _, o := range owned {
		r.startCleanup(ownedJob(s.seq, o.handle))
	}
}

// ownedJob is the close-time destroy of an owned sandbox.
func ownedJob(seq uint64, h *sandbox.Sandbox) *cleanupJob {
	return &cleanupJob{session: seq, id: h.ID(), kill: h.Kill}
}

// beginShutdown closes every session (starting their destroys) and makes
// every session that starts later closed from the outset.
func (r *registry) beginShutdown() {
	r.stopChecks() // create checks look one last time
	r.mu.Lock()
	r.shutdown = true
	all := make([]*session, 0, len(r.sessions))
	for _, s := range r.sessions {
		all = append(all, s)
	}
	r.mu.Unlock()
	for _, s := range all {
		r.end(s)
	}
}

// tracker counts goroutines that must finish before shutdown completes.
// Unlike sync.WaitGroup it allows add while another goroutine waits.
type tracker struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to zero
}

func (t *tracker) add() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		t.idle = make(chan struct{})
	}
	t.n++
}

func (t *tracker) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.n == 0 {
		close(t.idle)
	}
}

// wait returns when the count is zero, or ctx's error when ctx ends first.
func (t *tracker) wait(ctx context.Context) error {
	t.mu.Lock()
	if t.n == 0 {
		t.mu.Unlock()
		return nil
	}
	idle := t.idle
	t.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// beginCreate admits one create of principal within limit creates in
// flight per principal (Limits.CreatesPerPrincipal); done must be called
// once the create has an answer.
func (r *registry) beginCreate(principal string, limit int) (done func(), ok bool) {
	r.createsMu.Lock()
	defer r.createsMu.Unlock()
	if r.creates[principal] >= limit {
		return nil, false
	}
	r.creates[principal]++
	return func() {
		r.createsMu.Lock()
		defer r.createsMu.Unlock()
		if r.creates[principal]--; r.creates[principal] <= 0 {
			delete(r.creates, principal)
		}
	}, true
}
