package server

import (
	"context"
	"sync"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

// A tool whose answer is large (an inline download_file: its base64 in
// the response) reserves the answer's bytes in the HTTP server's in-flight
// budget (HTTPOptions.MaxInFlightBytes), beside the request bodies, before
// it reads them; the front end gives them back once the response has been
// written. The front end hands the tool the request's hold through a
// header it always sets itself ([holdHeader]), as it does the principal.

// holdHeader carries the token of the request's hold from the HTTP front
// end to the tool handler; a value the client sent is replaced or removed.
const holdHeader = "Sandboxkit-Response-Hold"

// responseHold is what one HTTP request holds of the in-flight budget for
// its response.
type responseHold struct {
	budget *byteBudget
	mu     sync.Mutex
	held   int64
}

// reserve takes n bytes of the budget for the response (at most the
// whole budget: a larger answer has it all to itself), waiting as long as
// the budget lets a request wait; false when it stayed full.
func (h *responseHold) reserve(ctx context.Context, n int64) bool {
	if h.budget == nil || h.budget.sem == nil {
		return true // no bound
	}
	n = min(n, h.budget.size)
	if !h.budget.acquire(ctx, n) {
		return false
	}
	h.mu.Lock()
	h.held += n
	h.mu.Unlock()
	return true
}

// shrink gives back what the hold has beyond n bytes.
func (h *responseHold) shrink(n int64) {
	h.mu.Lock()
	extra := max(h.held-max(n, 0), 0)
	h.held -= extra
	h.mu.Unlock()
	h.budget.release(extra)
}

// holdBook maps the tokens of the requests in flight to their holds.
type holdBook struct {
	mu sync.Mutex
	m  map[string]*responseHold
}

// open starts the hold of one request; close it when its response has
// been written.
func (b *holdBook) open(budget *byteBudget) (string, *responseHold) {
	h := &responseHold{budget: budget}
	tok := randomHex(16)
	b.mu.Lock()
	if b.m == nil {
		b.m = map[string]*responseHold{}
	}
	b.m[tok] = h
	b.mu.Unlock()
	return tok, h
}

// close forgets the hold and returns what it reserved.
func (b *holdBook) close(tok string, h *responseHold) {
	b.mu.Lock()
	delete(b.m, tok)
	b.mu.Unlock()
	h.shrink(0)
}

func (b *holdBook) lookup(tok string) *responseHold {
	if tok == "" {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.m[tok]
}

type holdKey struct{}

// withHold gives a tool call its request's hold (none over stdio).
func withHold(ctx context.Context, h *responseHold) context.Context {
	if h == nil {
		return ctx
	}
	return context.WithValue(ctx, holdKey{}, h)
}

// reserveResponse reserves n bytes of the in-flight budget for the call's
// response and returns what shrinks the reservation to the bytes the answer
// turned out to need. Without a hold (stdio, in-memory) there is no budget.
// One tool call makes at most one reservation.
func reserveResponse(ctx context.Context, n int64) (shrink func(n int64), err error) {
	h, _ := ctx.Value(holdKey{}).(*responseHold)
	if h == nil {
		return func(int64) {}, nil
	}
	if !h.reserve(ctx, n) {
		return nil, &ToolError{Category: sandbox.RateLimited, Code: codeServerBusy, Recovery: hintServerBusy}
	}
	return h.shrink, nil
}
