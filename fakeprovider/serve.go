package fakeprovider

import (
	"net/http"
	"strings"
)

// serve runs one request through the pipeline every route shares: journal
// entry, body tap, fault injection, then next. A request a fault matched
// counts in the fault's [FaultHandle.InFlight] until serve returns.
func (p *Provider) serve(w http.ResponseWriter, r *http.Request, op, sandboxID string, envd bool, next http.HandlerFunc) {
	e := &Entry{
		Op: op, Envd: envd, Method: r.Method, Host: r.Host, Path: r.URL.Path,
		Query: r.URL.Query(), Header: r.Header.Clone(), Time: p.clock.Now(), SandboxID: sandboxID,
	}
	p.journal.begin(e)
	tap := &bodyTap{rc: r.Body}
	r.Body = tap
	sw := &statusWriter{ResponseWriter: w, journal: p.journal, entry: e}
	var (
		h     *FaultHandle
		fault string
	)
	// Registered first, so it runs last: the request stays in flight until
	// its journal entry is final.
	defer func() {
		if h != nil {
			h.leave()
		}
	}()
	defer func() {
		body, truncated := tap.finish(r.Context().Err() != nil || fault == "reset")
		p.journal.update(e, func(e *Entry) {
			e.Body, e.BodyTruncated, e.Fault = body, truncated, fault
		})
	}()
	var out http.ResponseWriter = sw
	if h = p.faults.match(op, sandboxID); h != nil {
		fault = faultKind(h.fault)
		p.journal.update(e, func(e *Entry) { e.Fault = fault })
		var handled bool
		if out, handled = p.applyFault(sw, r, op, h); handled {
			return
		}
	}
	next(out, r)
}

// controlPlane wraps a control-plane handler: the shared pipeline, then the
// API key check (skipped for unknown routes, which get 404 either way).
func (p *Provider) controlPlane(op string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var id string
		if strings.Contains(op, "{sandboxID}") {
			id = r.PathValue("sandboxID")
			if short, err := shortID(id); err == nil {
				id = short
			}
		}
		p.serve(w, r, op, id, false, func(w http.ResponseWriter, r *http.Request) {
			if op != "" && !p.authorize(w, r) {
				return
			}
			h(w, r)
		})
	})
}
