package server

import (
	"context"
	"errors"
	"time"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

// reached is a sandbox a data-plane tool works on: its canonical ID, its
// daemon client, and the owned record when this session owns it (nil for an
// external sandbox, which is never renewed, owned or destroyed: RENEW-2).
type reached struct {
	id    string
	owned *ownedSandbox
	// lease is set for a leased sandbox reached by a modern request: it
	// is renewed by its policy (LEASE-2).
	lease *leaseRecord
	envd  *sandbox.Envd
}

// envdClient returns the owned sandbox's daemon client, built once and reused.
func (o *ownedSandbox) envdClient() *sandbox.Envd {
	o.envdOnce.Do(func() { o.envd = o.handle.Envd(nil) })
	return o.envd
}

// reach resolves the sandbox of an execution, file, background or binary
// tool. With sandbox_id: an owned sandbox through its handle, any other
// through the platform's connect call (RENEW-2). Without: the default, and
// when there is none a new sandbox with the default template, which becomes
// default and owned (SESSION-2).
func reach(ctx context.Context, d *Deps, sess *session, a args) (*reached, error) {
	if sess.modern != nil {
		return reachModern(ctx, d, sess.modern, a) // MODERN-1
	}
	if a.has("sandbox_id") {
		id, err := canonicalID(d.Platform, a.str("sandbox_id"))
		if err != nil {
			return nil, err
		}
		if o, ok := sess.ownedByID(id); ok {
			return &reached{id: id, owned: o, envd: o.envdClient()}, nil
		}
		if err := guardForeign(ctx, d, sess, id); err != nil { // HANDLE-1
			return nil, err
		}
		// RENEW-2: reaching an external sandbox must not renew it, so the
		// connect asks for no lifetime (a running sandbox keeps its end time).
		h, err := d.Platform.Connect(ctx, id, &sandbox.ConnectOptions{KeepLifetime: true})
		if err != nil {
			return nil, err
		}
		return &reached{id: id, envd: h.Envd(nil)}, nil
	}
	if r, ok := reachDefault(sess); ok {
		return r, nil
	}
	// SESSION-2: one implicit create per session at a time.
	sess.create.Lock()
	defer sess.create.Unlock()
	if r, ok := reachDefault(sess); ok {
		return r, nil
	}
	if sess.isClosed() {
		return nil, sessionClosedError()
	}
	o, err := createOwned(ctx, d, sess, &sandbox.CreateOptions{})
	if err != nil {
		return nil, err
	}
	id := o.handle.ID()
	return &reached{id: id, owned: o, envd: o.envdClient()}, nil
}

// reachDefault returns the session's default sandbox, which is always owned.
func reachDefault(sess *session) (*reached, bool) {
	id, ok := sess.defaultSandbox()
	if !ok {
		return nil, false
	}
	o, ok := sess.ownedByID(id)
	if !ok {
		return nil, false
	}
	return &reached{id: id, owned: o, envd: o.envdClient()}, true
}

// renew extends an owned sandbox's lifetime to the session's renewal policy
// before the tool returns (RENEW-1). External sandboxes are never renewed
// (RENEW-2), and nothing is renewed once the session has closed or the
// sandbox is no longer owned (TIMEOUT-5). A failed renewal is logged, not
// reported: the tool's own work has been done. toolErr is the tool's own
// outcome: when the provider did not answer it at all (no response before
// the deadline, or the connection failed), the renewal is skipped, since it
// would only double the time the tool takes to report the outage.
func renew(ctx context.Context, d *Deps, sess *session, r *reached, toolErr error) {
	if r != nil && r.lease != nil && !unanswered(toolErr) {
		renewLease(ctx, d, r) // LEASE-2
		return
	}
	if r == nil || r.owned == nil || unanswered(toolErr) {
		return
	}
	n, ok := sess.renewalOf(r.id, r.owned)
	if !ok {
		return
	}
	if err := d.own.setTimeout(ctx, r.owned.handle, n); err != nil { // at most the owner lease
		d.Logger.Warn("renewal failed", "session", sess.seq, "category", string(sandbox.CategoryOf(err)))
	}
}

// unanswered reports whether err is a provider call that got no answer:
// a timeout or connection failure without an HTTP status.
func unanswered(err error) bool {
	var se *sandbox.Error
	if !errors.As(err, &se) {
		return false
	}
	return se.HTTPStatus == 0 && (se.Category == sandbox.Timeout || se.Category == sandbox.Unavailable)
}

// dataPlane is the handler of a tool that works inside a sandbox (the
// execution, file, binary and background-start tools): the one place where
// such a tool reaches its sandbox and renews it (RENEW-1, RENEW-2). Build
// the handler with [dataPlane.handler].
type dataPlane struct {
	// check, when set, runs before the sandbox is reached: an error from it
	// reaches, creates and renews nothing.
	check func(sess *session, a args) error
	// fileOp bounds run's context by Limits.FileTimeout instead of the
	// call's provider deadline (budget.go): the tool's work is one file
	// operation.
	fileOp bool
	// command: run runs a command, bounded by its own timeout (EXEC-1)
	// instead of the call's provider deadline; a file step of its own
	// takes [fileContext].
	command bool
	// run does the tool's work on the reached sandbox.
	run func(ctx context.Context, sess *session, r *reached, a args) (any, error)
}

// handler reaches the sandbox (RENEW-2, SESSION-2), runs the tool, and
// then renews an owned sandbox whatever the tool's outcome (RENEW-1). The
// reach and the renewal share the call's provider deadline; work with a
// bound of its own (a file operation, a command) runs outside it.
func (p dataPlane) handler(deps *Deps) handlerFunc {
	return func(ctx context.Context, sess *session, a args) (any, error) {
		if p.check != nil {
			if err := p.check(sess, a); err != nil {
				return nil, err
			}
		}
		r, err := reach(ctx, deps, sess, a)
		if err != nil {
			return nil, err
		}
		if !p.fileOp && !p.command {
			return renewed(ctx, deps, sess, r, func() (any, error) { return p.run(ctx, sess, r, a) })
		}
		paused := pauseCallDeadline(ctx)
		bound := time.Duration(0) // a command: its own timeout
		if p.fileOp {
			bound = deps.Limits.FileTimeout
		}
		wctx, cancel := ownBound(ctx, bound)
		out, err := p.run(paused.carry(wctx), sess, r, a)
		cancel()
		rctx, cancel := paused.resume()
		defer cancel()
		return renewed(rctx, deps, sess, r, func() (any, error) { return out, err })
	}
}

// renewed runs a tool's work on a sandbox it has reached, then renews the
// sandbox when this session owns it, whatever the work's outcome (RENEW-1),
// with ctx (the call's context: the work's own bound has been released by
// then). The background tools that read or signal a command use it with
// the sandbox the command was started in.
func renewed(ctx context.Context, deps *Deps, sess *session, r *reached, work func() (any, error)) (_ any, err error) {
	defer func() {
		if err != nil && r != nil && r.lease != nil {
			err = confirmGone(ctx, deps, r, err) // HANDLE-3
		}
		renew(ctx, deps, sess, r, err)
	}()
	return work()
}

// fileContext bounds one file operation in a sandbox by Limits.FileTimeout,
// in place of the call's provider deadline (budget.go).
func fileContext(ctx context.Context, deps *Deps) (context.Context, context.CancelFunc) {
	return ownBound(ctx, deps.Limits.FileTimeout)
}
