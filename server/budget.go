package server

import (
	"context"
	"time"
)

// A tool call waits for the provider at most the provider deadline in all
// (the platform's request timeout, serve --provider-timeout), however many
// requests it makes: a provider that hangs or drips gives a timeout tool
// error within that deadline (ERR-1, ERR-2), not one deadline per request
// in sequence (the kit's errors.hang and errors.drip specs answer "within
// the deadline plus grace" for the whole call). A step with a bound of its
// own runs outside it: a command under its timeout (EXEC-1), a file
// transfer under [Limits.FileTimeout]; the call's deadline stands still
// meanwhile, and what was left of it bounds the steps after (the renewal,
// RENEW-1). A command's start is provider work, though: it gets what was
// left (startWithin).

// budgetKey holds, in a call's context, the context the call's deadline
// was set on: the request's own, without that deadline.
type budgetKey struct{}

// withCallDeadline bounds the provider work of one tool call by d.
func withCallDeadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithValue(ctx, budgetKey{}, ctx), d)
}

// outsideCallDeadline returns the request's context without the call's
// deadline (the client's cancellation and the session's end still hold).
func outsideCallDeadline(ctx context.Context) context.Context {
	if outer, ok := ctx.Value(budgetKey{}).(context.Context); ok {
		return outer
	}
	return ctx
}

// ownBound is a context for a step bounded by its own bound instead of the
// call's deadline (bound 0: only by the step itself, as a command by its
// timeout).
func ownBound(ctx context.Context, bound time.Duration) (context.Context, context.CancelFunc) {
	outer := outsideCallDeadline(ctx)
	if bound <= 0 {
		return context.WithCancel(outer)
	}
	return context.WithTimeout(outer, bound)
}

// pausedDeadline is what was left of a call's deadline when a step with a
// bound of its own began.
type pausedDeadline struct {
	outer context.Context
	left  time.Duration
	set   bool // the call had a deadline
}

// pauseCallDeadline stops the call's deadline while a step with its own
// bound runs.
func pauseCallDeadline(ctx context.Context) pausedDeadline {
	outer := outsideCallDeadline(ctx)
	dl, ok := ctx.Deadline()
	if !ok {
		return pausedDeadline{outer: outer}
	}
	return pausedDeadline{outer: outer, left: max(time.Until(dl), 0), set: true}
}

// resume is the call's context again after the step, with what was left
// of its deadline counted from now.
func (p pausedDeadline) resume() (context.Context, context.CancelFunc) {
	if !p.set {
		return context.WithCancel(p.outer)
	}
	return withCallDeadline(p.outer, p.left)
}

// pausedKey holds, in a step's context, what was left of the call's
// deadline when the step began.
type pausedKey struct{}

// carry puts what was left of the call's deadline into a step's context:
// a command's start is provider work the call's deadline bounds, though
// the command's run is not (startWithin).
func (p pausedDeadline) carry(ctx context.Context) context.Context {
	if !p.set {
		return ctx
	}
	return context.WithValue(ctx, pausedKey{}, max(p.left, time.Nanosecond))
}

// startWithin is what was left of the call's deadline when the step began,
// or 0 when the call has none.
func startWithin(ctx context.Context) time.Duration {
	left, _ := ctx.Value(pausedKey{}).(time.Duration)
	return left
}
