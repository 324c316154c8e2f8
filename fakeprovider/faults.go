package fakeprovider

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxkit/sandboxkit/internal/fakecodeinterp"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// A Fault makes matching requests misbehave before they reach their
// handler. Its steps run in this order: Delay, then Hang, then the first
// of Reset, Oversize, Status, Malformed that is set; when none is, the
// request goes on to its handler (so a Delay, Hang or Drip alone only slows
// it down). Drip applies to whichever body is then written: the fault's own
// or the handler's.
type Fault struct {
	// Op is the route-table operation to match (a sandbox.Op* constant, or
	// a route of the code interpreter such as [OpCodeInterpreterExecute]);
	// "" matches every request, including unknown routes.
	Op string
	// SandboxID is the sandbox to match; "" matches any (and none).
	SandboxID string
	// Status, when non-zero, answers with this status. The body is Body
	// when set, else E2B's error shape ({"code","message"}, with a canary).
	Status int
	// Body replaces the default body of a Status fault, written as is.
	Body string
	// Delay waits this long (real time, not the Provider's clock) first.
	Delay time.Duration
	// Reset drops the connection: in-process, the round trip fails with an
	// error wrapping syscall.ECONNRESET; over loopback the server closes
	// the TCP connection with SO_LINGER 0, so the client sees a reset.
	Reset bool
	// Malformed answers with the route's success status (200 in place of
	// 204, which cannot carry a body) and a body that is not JSON.
	Malformed bool
	// Hang blocks the request until [FaultHandle.Release] is called or the
	// request's context ends.
	Hang bool
	// Orphan makes a Delay or Hang outlast the request's client: the held
	// request waits for its Delay or [FaultHandle.Release] even when its
	// client has gone, then goes on to its handler, as a platform that
	// acts on a request its caller gave up on (a create whose answer
	// never came). It may not be combined with Reset, Status, Malformed or
	// Oversize.
	Orphan bool
	// Drip, when non-zero, sends the status line and headers at once, then
	// the response body (the handler's, or that of a Status, Malformed or
	// Oversize fault) one byte at a time, each byte written and flushed Drip
	// after the previous one, until the body ends, the request's context
	// does, or [FaultHandle.Release] is called (the rest then goes out at
	// once). A bodiless answer (204, HEAD) is not slowed.
	Drip time.Duration
	// Oversize, when non-zero, answers with Status (or, when Status is 0,
	// the route's success status: 201 for create, else 200), Content-Type
	// application/json, no Content-Length, and a body of exactly Oversize
	// bytes: `{"sandboxID":"` then 'a's, a JSON string that never closes.
	// The body is generated as it is written, never held in memory, and
	// stops when the client goes away. It may not be combined with Body,
	// Malformed or Reset.
	Oversize int64
	// Times is how many requests the fault applies to; 0 means until it is
	// cleared.
	Times int
}

// A FaultHandle controls one injected fault.
type FaultHandle struct {
	p        *Provider
	fault    Fault
	released chan struct{}
	release  sync.Once

	// Guarded by p.faults.mu.
	hits     int
	cleared  bool
	inFlight int
	idle     chan struct{} // closed while inFlight is 0
}

// faultTable holds the injected faults in injection order.
type faultTable struct {
	mu      sync.Mutex
	handles []*FaultHandle
}

// knownOps lists every operation a Fault may name: the platform's, the
// daemon's and the code interpreter's (port 49999).
func knownOps() []string {
	return slices.Concat(sandbox.ControlPlaneOps(), sandbox.EnvdOps(), fakecodeinterp.Ops())
}

// InjectFault installs f and returns its handle. When several faults match
// a request, the one injected first applies. InjectFault panics when f.Op is
// neither "" nor a route-table operation, or f.Status is outside 200..599,
// or f.Times, f.Drip or f.Oversize is negative, or f.Oversize is
// combined with Body, Malformed, Reset or a status that carries no body, or
// f.Orphan lacks Hang and Delay or comes with an outcome of its own.
func (p *Provider) InjectFault(f Fault) *FaultHandle {
	if f.Op != "" && !slices.Contains(knownOps(), f.Op) {
		panic(fmt.Sprintf("fakeprovider: InjectFault: unknown op %q", f.Op))
	}
	if f.Status != 0 && (f.Status < 200 || f.Status > 599) {
		panic(fmt.Sprintf("fakeprovider: InjectFault: invalid status %d", f.Status))
	}
	if f.Times < 0 {
		panic(fmt.Sprintf("fakeprovider: InjectFault: negative Times %d", f.Times))
	}
	if f.Drip < 0 {
		panic(fmt.Sprintf("fakeprovider: InjectFault: negative Drip %v", f.Drip))
	}
	checkOversize(f)
	if f.Orphan && (f.Reset || f.Status != 0 || f.Malformed || f.Oversize != 0 || !(f.Hang || f.Delay > 0)) {
		panic("fakeprovider: InjectFault: Orphan holds a request for its handler: it needs Hang or Delay, and no Reset, Status, Malformed or Oversize")
	}
	idle := make(chan struct{})
	close(idle)
	h := &FaultHandle{p: p, fault: f, released: make(chan struct{}), idle: idle}
	p.faults.mu.Lock()
	p.faults.handles = append(p.faults.handles, h)
	p.faults.mu.Unlock()
	return h
}

// Release unblocks every request the fault holds with Hang, and ends the
// slowing of every Drip body (the rest is sent at once), now and later.
func (h *FaultHandle) Release() {
	h.release.Do(func() { close(h.released) })
}

// Clear removes the fault: it matches no further request. Requests it is
// already holding stay held until Release.
func (h *FaultHandle) Clear() {
	h.p.faults.mu.Lock()
	defer h.p.faults.mu.Unlock()
	h.cleared = true
	h.p.faults.handles = slices.DeleteFunc(h.p.faults.handles, func(x *FaultHandle) bool { return x == h })
}

// Hits returns how many requests the fault has applied to.
func (h *FaultHandle) Hits() int {
	h.p.faults.mu.Lock()
	defer h.p.faults.mu.Unlock()
	return h.hits
}

// InFlight returns how many requests the fault has matched whose handling
// has not ended yet: held by Delay or Hang, being dripped or written as an
// oversized body, or still in their handler. Once a client's calls have
// returned, a Hang fault's InFlight falls to 0 without [FaultHandle.Release]
// only if the client cancelled (abandoned) the requests it gave up on.
func (h *FaultHandle) InFlight() int {
	h.p.faults.mu.Lock()
	defer h.p.faults.mu.Unlock()
	return h.inFlight
}

// WaitIdle waits until [FaultHandle.InFlight] is 0 and returns nil, or
// returns an error wrapping ctx.Err() when ctx ends first.
func (h *FaultHandle) WaitIdle(ctx context.Context) error {
	for {
		h.p.faults.mu.Lock()
		n, idle := h.inFlight, h.idle
		h.p.faults.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-idle:
			// Idle for a moment; check again, a new request may have come.
		case <-ctx.Done():
			return fmt.Errorf("fakeprovider: fault still handling %d request(s): %w", h.InFlight(), ctx.Err())
		}
	}
}

// enterLocked counts a request the fault matched as in flight. The caller
// holds p.faults.mu.
func (h *FaultHandle) enterLocked() {
	if h.inFlight == 0 {
		h.idle = make(chan struct{})
	}
	h.inFlight++
}

// leave counts the end of a request's handling.
func (h *FaultHandle) leave() {
	h.p.faults.mu.Lock()
	defer h.p.faults.mu.Unlock()
	h.inFlight--
	if h.inFlight == 0 {
		close(h.idle)
	}
}

// ClearFaults removes every fault and releases every hang.
func (p *Provider) ClearFaults() {
	p.faults.mu.Lock()
	hs := p.faults.handles
	p.faults.handles = nil
	for _, h := range hs {
		h.cleared = true
	}
	p.faults.mu.Unlock()
	for _, h := range hs {
		h.Release()
	}
}

// match returns the first active fault matching op and id, counting the
// hit and the request as in flight (the caller must call leave), and
// retiring the fault once its Times are used up.
func (t *faultTable) match(op, id string) *FaultHandle {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, h := range t.handles {
		f := h.fault
		if (f.Op != "" && f.Op != op) || (f.SandboxID != "" && !SameSandbox(f.SandboxID, id)) {
			continue
		}
		h.hits++
		h.enterLocked()
		if f.Times > 0 && h.hits >= f.Times {
			h.cleared = true
			t.handles = slices.Delete(t.handles, i, i+1)
		}
		return h
	}
	return nil
}

// successStatus is the status a Malformed or Oversize fault answers op
// with: 201 for create, else 200 (never 204, which cannot carry a body).
func successStatus(op string) int {
	if op == sandbox.OpCreateSandbox {
		return http.StatusCreated
	}
	return http.StatusOK
}

// checkOversize panics when f misuses Oversize.
func checkOversize(f Fault) {
	switch {
	case f.Oversize < 0:
		panic(fmt.Sprintf("fakeprovider: InjectFault: negative Oversize %d", f.Oversize))
	case f.Oversize == 0:
	case f.Body != "" || f.Malformed || f.Reset:
		panic("fakeprovider: InjectFault: Oversize writes its own body; it cannot be combined with Body, Malformed or Reset")
	case f.Status == http.StatusNoContent || f.Status == http.StatusNotModified:
		panic(fmt.Sprintf("fakeprovider: InjectFault: Oversize needs a status that carries a body, not %d", f.Status))
	}
}

// applyFault runs fault h on the request. It reports whether the fault
// answered the request (or dropped it), in which case the handler must not
// run; otherwise it returns the writer the handler must use (w, or w
// wrapped to drip the body).
func (p *Provider) applyFault(w http.ResponseWriter, r *http.Request, op string, h *FaultHandle) (http.ResponseWriter, bool) {
	f := h.fault
	ctx := r.Context()
	if (f.Hang || f.Delay > 0) && !readBodyFirst(r) {
		return nil, true
	}
	if f.Orphan {
		holdPastClient(f, h)
		return w, false
	}
	if f.Delay > 0 {
		t := time.NewTimer(f.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, true
		}
	}
	if f.Hang {
		select {
		case <-h.released:
		case <-ctx.Done():
			return nil, true
		}
	}
	if f.Reset {
		resetConnection(w)
		return nil, true
	}
	if f.Drip > 0 {
		w = newDripWriter(w, r, f.Drip, h.released)
	}
	switch {
	case f.Oversize > 0:
		status := f.Status
		if status == 0 {
			status = successStatus(op)
		}
		writeOversize(ctx, w, status, f.Oversize)
	case f.Status != 0:
		if f.Body == "" {
			p.writeError(w, r, f.Status, http.StatusText(f.Status))
		} else {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(f.Status)
			_, _ = w.Write([]byte(f.Body))
		}
	case f.Malformed:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(successStatus(op))
		_, _ = fmt.Fprintf(w, "<html><body>upstream sent garbage %s</body></html>", p.canaries.issue(canaryBody))
	default:
		return w, false
	}
	return nil, true
}

// holdPastClient holds an Orphan fault's request for its Delay, then until
// Release when it hangs, whether or not its client is still there.
func holdPastClient(f Fault, h *FaultHandle) {
	if f.Delay > 0 {
		time.Sleep(f.Delay)
	}
	if f.Hang {
		<-h.released
	}
}

// readBodyFirst reads the body of a request a fault is about to hold into
// memory, for the handler to read after all. Over a real connection,
// net/http watches for the client going away (and ends the request's
// context) only once the body has been read: unread, a held request would
// outlive its client. It reports false when the read failed (the client is
// gone).
func readBodyFirst(r *http.Request) bool {
	if r.Body == nil || r.Body == http.NoBody {
		return true
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	return true
}

// faultKind names what f does, for the journal: its outcome when it has one
// ("reset", "oversize", "status", "malformed"), else how it slows the
// request ("hang", "delay", "drip"), else "pass".
func faultKind(f Fault) string {
	switch {
	case f.Reset:
		return "reset"
	case f.Oversize > 0:
		return "oversize"
	case f.Status != 0:
		return "status"
	case f.Malformed:
		return "malformed"
	case f.Hang:
		return "hang"
	case f.Delay > 0:
		return "delay"
	case f.Drip > 0:
		return "drip"
	}
	return "pass"
}

// connResetter is implemented by the in-process response writer.
type connResetter interface {
	resetConnection()
}

// errConnReset returns the error an in-process round trip fails with on a
// Reset fault.
func errConnReset() error {
	return fmt.Errorf("fakeprovider: read: connection reset by peer: %w", syscall.ECONNRESET)
}

// resetConnection drops the connection under w: in-process it fails the
// round trip with ECONNRESET; on a real server it hijacks the TCP
// connection and closes it with SO_LINGER 0, which sends a RST.
func resetConnection(w http.ResponseWriter) {
	for cur := w; cur != nil; {
		if rs, ok := cur.(connResetter); ok {
			rs.resetConnection()
			return
		}
		u, ok := cur.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			break
		}
		cur = u.Unwrap()
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// No way to reach the connection: abort the response instead, which
		// net/http turns into a dropped connection.
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}
