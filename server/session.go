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
	// ss is the SDK session; httpID its Mcp-Session-Id ("" on stdio).
	// Both are set once, when the session is attached.
	ss     *mcp.ServerSession
	httpID string
	// owner is the principal of the session's first request, "" until
	// then; guarded by mu.
	owner string

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
	if len(s.owned)+s.creating >= limit { // QUOTA-1: the cap-th create is accepted, the next refused
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

// claim records principal as the session's owner, unless it has one.
func (s *session) claim(principal string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.owner == "" {
		s.owner = principal
	}
}

// principal is the session's owner (LocalPrincipal when it was never
// claimed: stdio, in-memory).
func (s *session) principal() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.owner == "" {
		return LocalPrincipal
	}
	return s.owner
}
