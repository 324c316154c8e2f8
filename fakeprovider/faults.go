package fakeprovider

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

// A Fault makes matching requests misbehave before they reach their
// handler. Its steps run in this order: Delay, then Hang, then the first
// of Reset, Status, Malformed that is set; when none is, the request goes on
// to its handler (so a Delay or Hang alone only slows it down).
type Fault struct {
	// Op is the route-table operation to match (a sandbox.Op* constant);
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
	hits    int
	cleared bool
}

// faultTable holds the injected faults in injection order.
type faultTable struct {
	mu      sync.Mutex
	handles []*FaultHandle
}

// knownOps lists every operation a Fault may name.
func knownOps() []string {
	return append(sandbox.ControlPlaneOps(), sandbox.EnvdOps()...)
}

// InjectFault installs f and returns its handle. When several faults match
// a request, the one injected first applies. InjectFault panics when f.Op is
// neither "" nor a route-table operation, or f.Status is outside 200..599, or f.Times is negative.
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
	h := &FaultHandle{p: p, fault: f, released: make(chan struct{})}
	p.faults.mu.Lock()
	p.faults.handles = append(p.faults.handles, h)
	p.faults.mu.Unlock()
	return h
}

// Release unblocks every request the fault holds with Hang, now and later.
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
// hit and retiring the fault once its Times are used up.
func (t *faultTable) match(op, id string) *FaultHandle {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, h := range t.handles {
		f := h.fault
		if (f.Op != "" && f.Op != op) || (f.SandboxID != "" && f.SandboxID != id) {
			continue
		}
		h.hits++
		if f.Times > 0 && h.hits >= f.Times {
			h.cleared = true
			t.handles = slices.Delete(t.handles, i, i+1)
		}
		return h
	}
	return nil
}

// successStatus is the status a Malformed fault answers op with.
func successStatus(op string) int {
	if op == sandbox.OpCreateSandbox {
		return http.StatusCreated
	}
	return http.StatusOK
}

// applyFault runs the fault matching the request, if any, first passing its
// kind to note. It reports whether the fault answered the request (or
// dropped it), in which case the handler must not run.
func (p *Provider) applyFault(w http.ResponseWriter, r *http.Request, op, id string, note func(kind string)) bool {
	h := p.faults.match(op, id)
	if h == nil {
		return false
	}
	f := h.fault
	ctx := r.Context()
	note(faultKind(f))
	if f.Delay > 0 {
		t := time.NewTimer(f.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return true
		}
	}
	if f.Hang {
		select {
		case <-h.released:
		case <-ctx.Done():
			return true
		}
	}
	switch {
	case f.Reset:
		resetConnection(w)
		return true
	case f.Status != 0:
		if f.Body == "" {
			p.writeError(w, r, f.Status, http.StatusText(f.Status))
		} else {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(f.Status)
			_, _ = w.Write([]byte(f.Body))
		}
		return true
	case f.Malformed:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(successStatus(op))
		_, _ = fmt.Fprintf(w, "<html><body>upstream sent garbage %s</body></html>", p.canaries.issue(canaryBody))
		return true
	}
	return false
}

// faultKind names what f does, for the journal: its outcome when it has one
// ("reset", "status", "malformed"), else how it slows the request ("hang",
// "delay"), else "pass".
func faultKind(f Fault) string {
	switch {
	case f.Reset:
		return "reset"
	case f.Status != 0:
		return "status"
	case f.Malformed:
		return "malformed"
	case f.Hang:
		return "hang"
	case f.Delay > 0:
		return "delay"
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
