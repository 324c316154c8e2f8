package server

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

// ownedSandbox is a sandbox this session created (SESSION-1): its managed
// handle and its renewal policy (RENEW-1, TIMEOUT-3).
type ownedSandbox struct {
	handle  *sandbox.Sandbox
	renewal time.Duration // guarded by session.mu

	envdOnce sync.Once
	envd     *sandbox.Envd
}

// session is the state of one MCP session. Once closed it stays closed: a
// late completion never reopens it, re-adds an owned sandbox or restores a
// default (TIMEOUT-5).
type session struct {
	seq uint64 // for logs only; never the Mcp-Session-Id
	// modern is set for the stand-in of one modern request, which has no
	// session: no default, nothing owned, nothing destroyed at its end
	// (MODERN-1, LEASE-3). nil for a legacy session.
	modern *modernCall
	// reg is the registry that destroys what the session leaves; nil only
	// in unit tests of a bare session.
	reg *registry
	// client is the client key of an HTTP session while it counts against
	// the caps; "" for other transports, and once evicted. Guarded by
	// reg.mu, like the three fields that follow.
	client string
	// ss is the SDK session; httpID its Mcp-Session-Id ("" on stdio).
	ss     *mcp.ServerSession
	httpID string
	// inflight counts HTTP requests of the session in progress, and
	// lastActive is when the last one began or ended: eviction picks
	// sessions idle the longest.
	inflight   int
	lastActive time.Time

	// create serialises implicit creation of the default sandbox, so that
	// concurrent calls without a default create one sandbox, not several.
	create sync.Mutex

	ctx    context.Context // cancelled when the session closes
	cancel context.CancelFunc
	// ended is closed once the close-time destroys of the session are
	// registered, so that every caller of registry.end, not only the
	// first, returns after that (a stdio server must not exit before).
	ended chan struct{}

	mu        sync.Mutex
	closed    bool
	defaultID string // canonical ID of the default sandbox, "" for none
	owned     map[string]*ownedSandbox
	commands  map[string]*bgCommand
	// creating counts explicit creates in flight, which the per-session
	// cap counts with owned; adopt moves one to owned at once (adopted
	// counts those whose release is still to come).
	creating, adopted int
	// gone are owned sandboxes whose kill the platform answered with 404:
	// no longer used, but destroyed again at close in case the answer was
	// wrong (a destroy of a sandbox that is gone is harmless).
	gone []*ownedSandbox
}

func newSession(seq uint64) *session {
	ctx, cancel := context.WithCancel(context.Background())
	return &session{seq: seq, ctx: ctx, cancel: cancel, ended: make(chan struct{}), owned: map[string]*ownedSandbox{}, commands: map[string]*bgCommand{}}
}

// isClosed reports whether the session has closed.
func (s *session) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// bind returns a context that is also cancelled when the session closes, so
// that calls in flight at close stop promptly.
func (s *session) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// defaultSandbox returns the canonical ID of the default sandbox.
func (s *session) defaultSandbox() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.defaultID, s.defaultID != ""
}

// ownedByID returns the owned sandbox with a canonical ID.
func (s *session) ownedByID(id string) (*ownedSandbox, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.owned[id]
	return o, ok
}

// codeTooManySandboxes is the tool error code of a create beyond
// Limits.SandboxesPerSession.
const codeTooManySandboxes = "too_many_sandboxes"

// tooManySandboxes is the error of a create beyond the per-session cap.
func tooManySandboxes(limit int) *ToolError {
	return &ToolError{Category: sandbox.RateLimited, Code: codeTooManySandboxes,
		Recovery: "this session owns " + itoa(limit) + " sandboxes, its limit: kill one with kill_sandbox first"}
}

// reserveCreate makes room for one explicit create within limit owned
// sandboxes; the returned release must be called once the create is done
// (adopted or failed).
func (s *session) reserveCreate(limit int) (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.owned)+s.creating >= limit {
		return nil, false
	}
	s.creating++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.adopted > 0 {
			s.adopted-- // adopt already stopped counting this one
			return
		}
		s.creating--
	}, true
}

// adopt records a sandbox this session just created as owned and default
// (CREATE-5). It returns false when the session has already closed: the
// caller must then destroy the sandbox itself.
func (s *session) adopt(id string, h *sandbox.Sandbox, renewal time.Duration) (*ownedSandbox, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false
	}
	o := &ownedSandbox{handle: h, renewal: renewal}
	s.owned[id] = o
	if s.creating > 0 {
		// The create in flight is now owned: count it once.
		s.creating--
		s.adopted++
	}
	s.defaultID = id
	return o, true
}

// setRenewal makes n the renewal policy of o after a successful SetTimeout
// (TIMEOUT-3), unless the session closed or o is no longer owned meanwhile
// (TIMEOUT-5).
func (s *session) setRenewal(id string, o *ownedSandbox, n time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.owned[id] != o {
		return
	}
	o.renewal = n
}

// renewal returns the current renewal policy of o, and false when the
// session closed or o is no longer owned (then nothing must be renewed).
func (s *session) renewalOf(id string, o *ownedSandbox) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.owned[id] != o {
		return 0, false
	}
	return o.renewal, true
}

// disown forgets an owned sandbox after it was killed (SESSION-3); it clears
// the default when that sandbox was the default. When the platform said
// the sandbox was already gone (404) rather than confirming the kill, the
// sandbox is still destroyed at close.
func (s *session) disown(id string, o *ownedSandbox, gone bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.owned[id] == o {
		delete(s.owned, id)
		if gone && !s.closed {
			s.gone = append(s.gone, o)
		}
	}
	if s.defaultID == id {
		s.defaultID = ""
	}
}

// close marks the session closed and hands back what it owned; it returns
// nil for every call after the first. After close no record is ever
// rebuilt.
func (s *session) close() (owned []*ownedSandbox, cmds []*bgCommand, first bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, false
	}
	s.closed = true
	s.cancel()
	for _, o := range s.owned {
		owned = append(owned, o)
	}
	owned = append(owned, s.gone...)
	s.gone = nil
	for _, c := range s.commands {
		cmds = append(cmds, c)
	}
	s.owned = map[string]*ownedSandbox{}
	s.commands = map[string]*bgCommand{}
	s.defaultID = ""
	return owned, cmds, true
}

// registry holds the state of every live session, keyed by the SDK's
// *mcp.ServerSession (its ID is "" on stdio).
type registry struct {
	deps  *Deps
	sem   chan struct{} // bounds close-time destroys across the server
	state *cleanupState

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*session
	byID     map[string]*session // HTTP sessions by Mcp-Session-Id
	shutdown bool
	seq      uint64
	// Live HTTP sessions (those with a client), per client and in all,
	// plus the new sessions being set up (see reserveHTTP).
	httpLive      int
	clientLive    map[string]int
	httpPending   int
	clientPending map[string]int

	cleanups tracker // close-time destroys and create checks in flight
	watchers tracker // one per session, until ss.Wait returns
}

func newRegistry(deps *Deps) *registry {
	return &registry{deps: deps, sem: make(chan struct{}, deps.Limits.DestroyConcurrency), state: newCleanupState(),
		sessions: map[*mcp.ServerSession]*session{}, byID: map[string]*session{}, clientLive: map[string]int{}, clientPending: map[string]int{}}
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
	s.lastActive = r.deps.Now()
	r.sessions[ss] = s
	if id := ss.ID(); id != "" {
		s.httpID = id
		r.byID[id] = s
	}
	closed := r.shutdown
	r.watchers.add()
	r.mu.Unlock()

	if closed {
		r.end(s)
	}
	go func() {
		defer r.watchers.done()
		_ = ss.Wait()
		r.end(s)
		r.mu.Lock()
		delete(r.sessions, ss)
		if s.httpID != "" && r.byID[s.httpID] == s {
			delete(r.byID, s.httpID)
		}
		r.uncountLocked(s)
		r.mu.Unlock()
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

// uncountLocked stops counting s against the HTTP caps.
func (r *registry) uncountLocked(s *session) {
	if s.client == "" {
		return
	}
	r.httpLive--
	if r.clientLive[s.client]--; r.clientLive[s.client] <= 0 {
		delete(r.clientLive, s.client)
	}
	s.client = ""
}

// reserveHTTP counts a new HTTP session of client that is being set up,
// unless that would exceed total live sessions in all or perClient for
// the client (a limit <= 0 is no limit). At a limit, the session idle the
// longest (for at least evictIdle; never when evictIdle < 0) among those
// the limit counts is closed to make room. It reports which limit refused.
func (r *registry) reserveHTTP(client string, total, perClient int, evictIdle time.Duration) (ok bool, clientLimit bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if perClient > 0 && r.clientLive[client]+r.clientPending[client] >= perClient {
		if !r.evictLocked(client, evictIdle) {
			return false, true
		}
	}
	if total > 0 && r.httpLive+r.httpPending >= total {
		if !r.evictLocked("", evictIdle) {
			return false, false
		}
	}
	r.httpPending++
	r.clientPending[client]++
	return true, false
}

// evictLocked closes the counted HTTP session (of client, or of anyone
// when client is "") that has been idle the longest, if one has been idle
// for evictIdle; it stops counting it at once. It scans the live HTTP
// sessions, which happens only when a limit is reached.
func (r *registry) evictLocked(client string, evictIdle time.Duration) bool {
	if evictIdle < 0 {
		return false
	}
	cutoff := r.deps.Now().Add(-evictIdle)
	var victim *session
	for _, s := range r.byID {
		if s.client == "" || s.inflight > 0 || (client != "" && s.client != client) || s.lastActive.After(cutoff) {
			continue
		}
		if victim == nil || s.lastActive.Before(victim.lastActive) {
			victim = s
		}
	}
	if victim == nil {
		return false
	}
	r.uncountLocked(victim)
	r.deps.Logger.Info("idle session closed to make room for a new one", "session", victim.seq)
	go func() {
		r.end(victim)
		_ = victim.ss.Close()
	}()
	return true
}

// releaseHTTP ends a reservation of reserveHTTP.
func (r *registry) releaseHTTP(client string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.httpPending--
	if r.clientPending[client]--; r.clientPending[client] <= 0 {
		delete(r.clientPending, client)
	}
}

// bindHTTP counts the live session with the Mcp-Session-Id id as one of
// client's, until it ends. A session that has already ended is not counted.
func (r *registry) bindHTTP(id, client string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.byID[id]
	if !ok || s.client != "" {
		return
	}
	s.client = client
	r.httpLive++
	r.clientLive[client]++
}

// byHTTPID returns the record of the HTTP session with Mcp-Session-Id id.
func (r *registry) byHTTPID(id string) (*session, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.byID[id]
	return s, ok
}

// activeHTTP marks a request of the HTTP session id in progress; the
// returned func marks it done.
func (r *registry) activeHTTP(id string) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.byID[id]
	if !ok {
		return func() {}
	}
	s.inflight++
	s.lastActive = r.deps.Now()
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		s.inflight--
		s.lastActive = r.deps.Now()
	}
}

// beginShutdown closes every session (starting their destroys) and makes
// every session that starts later closed from the outset.
func (r *registry) beginShutdown() {
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

// liveSessions is the number of session records (for tests).
func (r *registry) liveSessions() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sessions)
}
