package server

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

// ModernProtocolVersion is the sessionless MCP version the server serves
// beside the 2025 era (TOOLS-4, section 13 of the contract).
const ModernProtocolVersion = "2026-07-28"

// SupportedProtocolVersions returns every version the server serves, newest
// first: [ModernProtocolVersion] and the [ProtocolVersions] that initialize
// negotiates. server/discover lists them, and a request whose _meta names
// another version gets -32022 listing them (TOOLS-4).
func SupportedProtocolVersions() []string {
	return append([]string{ModernProtocolVersion}, ProtocolVersions()...)
}

// isModernVersion reports whether v is a sessionless (2026-07-28 or newer)
// protocol version.
func isModernVersion(v string) bool { return v >= ModernProtocolVersion }

// versioned is what every SDK server request implements.
type versioned interface{ ProtocolVersion() string }

// modernRequest reports whether req is a modern request: one whose _meta
// names a 2026-07-28 (or newer) protocol version. Everything else belongs
// to a legacy (initialize) session.
func modernRequest(req mcp.Request) bool {
	v, ok := req.(versioned)
	return ok && isModernVersion(v.ProtocolVersion())
}

// Principals (HANDLE-1).
const (
	// LocalPrincipal is the one principal of a server without tokens: a
	// stdio process, or HTTP on loopback without a token.
	LocalPrincipal = "local"
	// TokenPrincipal is the principal of a server with one bearer token
	// ([HTTPOptions.Token]).
	TokenPrincipal = "token"
	// principalHeader carries the authenticated principal from the HTTP
	// front end to the tool handler. The front end always sets it after
	// authentication, replacing any value the client sent.
	principalHeader = "Sandboxkit-Principal"
)

// principalOf is the principal of a call: the one the HTTP front end
// authenticated, else the local one (stdio, in-memory).
func principalOf(req *mcp.CallToolRequest) string {
	if req.Extra != nil && req.Extra.Header != nil {
		if p := req.Extra.Header.Get(principalHeader); p != "" {
			return p
		}
	}
	return LocalPrincipal
}

// Metadata keys of a leased sandbox: what a modern request creates carries
// its lease policy and its principal as platform metadata (LEASE-4,
// HANDLE-1), so that any process or replica reads them back from the
// platform. A leased sandbox carries no [InstanceTagKey]: no sweep of a dead
// instance ever destroys it (LEASE-3).
const (
	// LeaseTagKey holds the lease policy in whole seconds.
	LeaseTagKey = "sandboxkit_lease"
	// PrincipalTagKey holds the principal that created the sandbox.
	PrincipalTagKey = "sandboxkit_principal"
	// SessionPrincipalTagKey holds the principal of the 2025 session that
	// owns a sandbox (beside [InstanceTagKey]): another principal reaching
	// it by ID gets not_found (HANDLE-1). It is not [PrincipalTagKey], which
	// marks what a principal's list_sandboxes lists and its lease count
	// counts (leased sandboxes only).
	SessionPrincipalTagKey = "sandboxkit_session_principal"
)

// modernCall is the state of one modern request: its principal, nothing
// else. It lives only as long as the request (MODERN-1: no default).
type modernCall struct {
	principal string
}

// leaseRecord is what the server knows of a sandbox a modern request named:
// read from the platform's metadata and cached, since that metadata never
// changes; the handle is the platform's connect answer (the daemon's
// credentials). policy 0 marks a sandbox without a lease (external: never
// renewed, RENEW-2).
type leaseRecord struct {
	policy    time.Duration
	principal string

	mu     sync.Mutex
	handle *sandbox.Sandbox // nil until a call needs the daemon
	envd   *sandbox.Envd
}

// connected returns the record's handle and daemon client, connecting on
// the first call that needs them, asking for no lifetime (the renewal
// after the call sets it, LEASE-2). A lifecycle call (get_sandbox,
// set_sandbox_timeout, kill_sandbox) needs neither, so a replica that
// reads the record for one makes no connect call (SDK-1).
func (l *leaseRecord) connected(ctx context.Context, d *Deps, id string) (*sandbox.Sandbox, *sandbox.Envd, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.handle == nil {
		h, err := d.Platform.Connect(ctx, id, &sandbox.ConnectOptions{KeepLifetime: true})
		if err != nil {
			return nil, nil, err
		}
		l.handle = h
	}
	if l.envd == nil {
		l.envd = l.handle.Envd(nil)
	}
	return l.handle, l.envd, nil
}

// maxLeaseRecords bounds the cache of lease records; a record dropped is
// read again from the platform on next use.
const maxLeaseRecords = 4096

// leaseBook is the server-wide cache of lease records. Nothing in it
// decides a renewal that the platform's metadata does not (LEASE-4): a
// record is a copy of that metadata, rebuilt from the platform whenever it
// is missing. (Background commands of modern requests keep their state in
// their sandbox: bgfile.go.)
type leaseBook struct {
	mu      sync.Mutex
	records map[string]*leaseRecord
}

func newLeaseBook() *leaseBook {
	return &leaseBook{records: map[string]*leaseRecord{}}
}

// remember caches the record of a sandbox.
func (b *leaseBook) remember(id string, rec *leaseRecord) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.records) >= maxLeaseRecords {
		for k := range b.records {
			delete(b.records, k)
			break
		}
	}
	b.records[id] = rec
}

// cached returns the cached record of a sandbox.
func (b *leaseBook) cached(id string) (*leaseRecord, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	rec, ok := b.records[id]
	return rec, ok
}

// forget drops a sandbox's record (killed, expired, or no longer reachable
// through the cached credentials).
func (b *leaseBook) forget(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.records, id)
}

// size is the number of records held (for tests).
func (b *leaseBook) size() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.records)
}

// foreignSandbox is the answer for a sandbox of another principal: the
// same as for an unknown one (HANDLE-1), saying it is unknown, expired or
// killed (HANDLE-3).
func foreignSandbox() *ToolError {
	return &ToolError{Category: sandbox.NotFound, HTTPStatus: 404, Recovery: sandbox.NotFound.Recovery()}
}

// noDefaultModern is MODERN-1: a modern request has no default sandbox.
func noDefaultModern() *ToolError {
	return &ToolError{Category: sandbox.InvalidArgument, Code: codeNoDefault, Field: "sandbox_id", Recovery: hintNoDefaultModern}
}

// lookup returns the record of a sandbox for principal: from the cache, or
// read from the platform. Another principal's leased sandbox is not_found
// (HANDLE-1); a sandbox the platform no longer has is the platform's
// not_found (HANDLE-3).
func (b *leaseBook) lookup(ctx context.Context, d *Deps, principal, id string) (*leaseRecord, error) {
	rec, ok := b.cached(id)
	if !ok {
		_, md, err := d.Platform.GetInfoAndMetadataByID(ctx, id, nil)
		if err != nil {
			return nil, err
		}
		rec = recordFrom(md)
		if rec.policy == 0 || rec.principal == principal {
			b.remember(id, rec)
		}
	}
	if rec.foreignTo(d, principal) {
		return nil, foreignSandbox() // HANDLE-1, HANDLE-6
	}
	return rec, nil
}

// foreignTo reports whether a sandbox with this record is not principal's
// to reach: another principal's leased sandbox, or one a 2025 session of
// another principal owns (HANDLE-1); on a server confined to own
// sandboxes, also any other sandbox without a lease (HANDLE-6: an external
// ID, or one another 2025 session owns; the owning session reaches its own
// through its own record before asking).
func (l *leaseRecord) foreignTo(d *Deps, principal string) bool {
	if l.policy > 0 || l.principal != "" {
		if l.principal != principal {
			return true // another principal's lease, or its session's sandbox
		}
		return l.policy == 0 && d.OwnSandboxesOnly // HANDLE-6: another session's
	}
	return d.OwnSandboxesOnly
}

// recordFrom reads a lease record from platform metadata; a sandbox
// without a valid lease key is external (policy 0).
func recordFrom(md map[string]string) *leaseRecord {
	secs, err := strconv.ParseInt(md[LeaseTagKey], 10, 64)
	if err != nil || secs <= 0 || secs > int64(sandbox.MaxTimeout/time.Second) {
		return &leaseRecord{principal: md[SessionPrincipalTagKey]} // no lease; a session's, or external
	}
	return &leaseRecord{policy: time.Duration(secs) * time.Second, principal: md[PrincipalTagKey]}
}

// reachModern resolves the sandbox of a data-plane tool in a modern
// request: sandbox_id is required (MODERN-1, nothing is created); a leased
// sandbox of this principal through its cached handle, renewed after the
// call (LEASE-2); any other through the platform's connect call without a
// lifetime (RENEW-2).
func reachModern(ctx context.Context, d *Deps, call *modernCall, a args) (*reached, error) {
	if !a.has("sandbox_id") {
		return nil, noDefaultModern()
	}
	id, err := canonicalID(d.Platform, a.str("sandbox_id"))
	if err != nil {
		return nil, err
	}
	rec, err := d.leases.lookup(ctx, d, call.principal, id)
	if err != nil {
		return nil, err
	}
	if rec.policy > 0 {
		_, envd, err := rec.connected(ctx, d, id)
		if err != nil {
			return nil, err
		}
		return &reached{id: id, lease: rec, envd: envd}, nil
	}
	h, err := d.Platform.Connect(ctx, id, &sandbox.ConnectOptions{KeepLifetime: true})
	if err != nil {
		return nil, err
	}
	return &reached{id: id, envd: h.Envd(nil)}, nil
}

// renewLease renews a leased sandbox by its policy after a call (LEASE-2):
// never beyond now + policy, never in the background. A sandbox the
// platform no longer has is forgotten.
func renewLease(ctx context.Context, d *Deps, r *reached) {
	h, _, err := r.lease.connected(ctx, d, r.id)
	if err == nil {
		err = h.SetTimeout(ctx, r.lease.policy)
	}
	if err != nil {
		if isNotFound(err) {
			d.leases.forget(r.id)
		}
		d.Logger.Warn("lease renewal failed", "sandbox_id", r.id, "category", string(sandbox.CategoryOf(err)))
	}
}

// confirmGone is called when a call on a cached leased sandbox failed in
// a way a vanished sandbox would cause (the daemon unreachable): the record
// is dropped and, when the platform says the sandbox is gone, the answer
// becomes not_found (HANDLE-3).
func confirmGone(ctx context.Context, d *Deps, r *reached, err error) error {
	switch sandbox.CategoryOf(err) {
	case sandbox.Unavailable, sandbox.Internal, sandbox.NotFound:
	default:
		return err
	}
	d.leases.forget(r.id)
	// Within what is left of the call's provider deadline (budget.go).
	if _, gerr := d.Platform.GetInfoByID(ctx, r.id, nil); isNotFound(gerr) {
		return gerr
	}
	return err
}

// createLeased creates a sandbox for a modern request: its lease policy
// (the timeout asked for, else 300 s) and principal go into its platform
// metadata (LEASE-1, LEASE-4, HANDLE-1); no session adopts it, so no close
// ever destroys it (LEASE-3). A create without a definite answer is looked
// for and destroyed, as in a session.
func createLeased(ctx context.Context, d *Deps, sess *session, opts *sandbox.CreateOptions) (*leaseRecord, error) {
	policy := opts.Timeout
	if policy == 0 {
		policy = sandbox.DefaultSandboxTimeout // LEASE-1: the stated default
	}
	opts.Timeout = policy // LEASE-1: at create, the end is now + policy
	done, err := admitCreate(ctx, d, sess, opts)
	if err != nil {
		return nil, err
	}
	defer done()
	tag := createTagValue()
	opts.Metadata = map[string]string{
		CreateTagKey:    tag,
		LeaseTagKey:     strconv.FormatInt(int64(policy/time.Second), 10),
		PrincipalTagKey: sess.modern.principal,
	}
	h, err := d.Platform.Create(context.WithoutCancel(ctx), opts)
	if err != nil {
		if ambiguousCreate(err) {
			checkLostCreate(d, sess, tag, opts)
		}
		return nil, err
	}
	d.Logger.Info("leased sandbox created", "sandbox_id", h.ID(), "lease_seconds", int64(policy/time.Second))
	rec := &leaseRecord{policy: policy, principal: sess.modern.principal, handle: h}
	d.leases.remember(h.ID(), rec)
	return rec, nil
}

// guardForeign keeps a legacy session from reaching a sandbox that a modern
// request, or a legacy session, of another principal created (HANDLE-1). Only a server with
// bearer tokens has more than one principal: a session of the local
// principal (stdio, tokenless loopback) makes no extra platform call.
func guardForeign(ctx context.Context, d *Deps, sess *session, id string) error {
	if sess.modern != nil || (sess.principal() == LocalPrincipal && !d.OwnSandboxesOnly) {
		return nil
	}
	_, md, err := d.Platform.GetInfoAndMetadataByID(ctx, id, nil)
	if err != nil {
		if isNotFound(err) || d.OwnSandboxesOnly {
			return err // HANDLE-6: confined, an unread sandbox is not reached
		}
		return nil // the call itself will report what is wrong
	}
	if recordFrom(md).foreignTo(d, sess.principal()) { // HANDLE-1, HANDLE-6
		return foreignSandbox()
	}
	return nil
}

// listsOwnOnly returns the principal whose leased sandboxes alone
// list_sandboxes lists, and whether it lists only those: in a modern
// request of a principal authenticated by a token (HANDLE-1), and in
// either era on a server confined to own sandboxes (HANDLE-6).
func listsOwnOnly(d *Deps, sess *session) (string, bool) {
	p := sess.principal()
	if sess.modern != nil {
		p = sess.modern.principal
	}
	return p, d.OwnSandboxesOnly || (sess.modern != nil && p != LocalPrincipal)
}
