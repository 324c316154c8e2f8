package fakeprovider

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"
)

// MaxJournalBody is how many bytes of each request body the journal keeps.
const MaxJournalBody = 64 << 10

// An Entry is one request the Provider received, control plane or envd.
type Entry struct {
	// Op is the route-table constant the request matched (for example
	// sandbox.OpGetSandbox), or "" when it matched none.
	Op string
	// Envd is true for a request addressed to a sandbox's daemon.
	Envd bool
	// Method, Host and Path are the request's method, host and URL path.
	Method, Host, Path string
	// Query is the parsed URL query.
	Query url.Values
	// Header is a copy of the request headers.
	Header http.Header
	// Body is the first [MaxJournalBody] bytes of the request body;
	// BodyTruncated reports whether there was more.
	Body          []byte
	BodyTruncated bool
	// Time is the Provider's clock when the request arrived.
	Time time.Time
	// SandboxID is the sandbox the request names (path or envd host/header),
	// reduced to its short form when valid; "" when none.
	SandboxID string
	// Status is the response status; 0 while no status has been written, or
	// when the connection was reset or the request abandoned before one was.
	Status int
	// Fault names the injected fault applied to the request, or "" when
	// none: what it did to the answer ("reset", "oversize", "status",
	// "malformed"), else how it slowed the request ("hang", "delay", or
	// "drip" for a fault whose only effect is Drip), else "pass".
	Fault string
}

// A Journal records every request a Provider receives, in arrival order. It
// is safe for concurrent use.
type Journal struct {
	mu      sync.Mutex
	entries []*Entry
}

// newJournal returns an empty journal.
func newJournal() *Journal { return &Journal{} }

// Journal returns the Provider's request journal.
func (p *Provider) Journal() *Journal { return p.journal }

// begin appends an entry for r and returns it for later updates.
func (j *Journal) begin(e *Entry) {
	j.mu.Lock()
	j.entries = append(j.entries, e)
	j.mu.Unlock()
}

// update runs fn on e under the journal's lock.
func (j *Journal) update(e *Entry, fn func(e *Entry)) {
	j.mu.Lock()
	fn(e)
	j.mu.Unlock()
}

// copyEntry returns a deep copy of e.
func copyEntry(e *Entry) Entry {
	c := *e
	c.Query = cloneValues(e.Query)
	c.Header = e.Header.Clone()
	c.Body = bytes.Clone(e.Body)
	return c
}

// cloneValues deep-copies v.
func cloneValues(v url.Values) url.Values {
	if v == nil {
		return nil
	}
	c := make(url.Values, len(v))
	for k, vs := range v {
		c[k] = slices.Clone(vs)
	}
	return c
}

// filter returns copies of the entries keep accepts.
func (j *Journal) filter(keep func(*Entry) bool) []Entry {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []Entry
	for _, e := range j.entries {
		if keep(e) {
			out = append(out, copyEntry(e))
		}
	}
	return out
}

// Entries returns a copy of every entry, oldest first.
func (j *Journal) Entries() []Entry {
	return j.filter(func(*Entry) bool { return true })
}

// Since returns copies of the entries from the n-th on (0-based), oldest
// first, and false when the journal holds fewer than n entries (it was
// reset since n was read from Len). A caller that watches the requests of
// one call copies only those, not the whole journal.
func (j *Journal) Since(n int) ([]Entry, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if n < 0 || n > len(j.entries) {
		return nil, false
	}
	out := make([]Entry, 0, len(j.entries)-n)
	for _, e := range j.entries[n:] {
		out = append(out, copyEntry(e))
	}
	return out, true
}

// Calls returns the entries whose Op is op, oldest first.
func (j *Journal) Calls(op string) []Entry {
	return j.filter(func(e *Entry) bool { return e.Op == op })
}

// Count returns how many entries have Op op.
func (j *Journal) Count(op string) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := 0
	for _, e := range j.entries {
		if e.Op == op {
			n++
		}
	}
	return n
}

// Ops returns the distinct Ops seen, in order of first appearance.
func (j *Journal) Ops() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var ops []string
	for _, e := range j.entries {
		if !slices.Contains(ops, e.Op) {
			ops = append(ops, e.Op)
		}
	}
	return ops
}

// ForSandbox returns the entries that name sandbox id, oldest first; id
// may be the legacy "<sandboxID>-<clientID>" form (see [SameSandbox]).
func (j *Journal) ForSandbox(id string) []Entry {
	return j.filter(func(e *Entry) bool { return SameSandbox(e.SandboxID, id) })
}

// Len returns the number of entries.
func (j *Journal) Len() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.entries)
}

// Reset forgets every entry. Requests in flight keep updating their own
// (now forgotten) entries.
func (j *Journal) Reset() {
	j.mu.Lock()
	j.entries = nil
	j.mu.Unlock()
}

// bodyTap passes a request body through to the handler while keeping its
// first MaxJournalBody bytes, so that journaling never consumes or delays a
// streaming body.
type bodyTap struct {
	rc        io.ReadCloser
	mu        sync.Mutex
	buf       []byte
	truncated bool
	eof       bool
}

// Read reads from the body and keeps a copy of what was read.
func (t *bodyTap) Read(b []byte) (int, error) {
	n, err := t.rc.Read(b)
	t.mu.Lock()
	if n > 0 {
		room := MaxJournalBody - len(t.buf)
		if room >= n {
			t.buf = append(t.buf, b[:n]...)
		} else {
			t.buf = append(t.buf, b[:max(room, 0)]...)
			t.truncated = true
		}
	}
	if err != nil {
		t.eof = true
	}
	t.mu.Unlock()
	return n, err
}

// Close closes the body.
func (t *bodyTap) Close() error { return t.rc.Close() }

// finish reads what the handler left unread, up to the journal's limit, as
// net/http's server does before reusing a connection, and returns the kept
// bytes. It reads nothing once ctxDone is true, so that an abandoned request
// never blocks here.
func (t *bodyTap) finish(ctxDone bool) ([]byte, bool) {
	t.mu.Lock()
	done := t.eof || t.truncated
	t.mu.Unlock()
	if !done && !ctxDone {
		_, _ = io.Copy(io.Discard, io.LimitReader(t, MaxJournalBody+1))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return bytes.Clone(t.buf), t.truncated
}

// statusWriter records the response status in the journal entry and passes
// everything else through, including Flush and (through Unwrap) Hijack.
type statusWriter struct {
	http.ResponseWriter
	journal *Journal
	entry   *Entry
	wrote   bool
}

// WriteHeader records code and forwards it.
func (w *statusWriter) WriteHeader(code int) {
	w.record(code)
	w.ResponseWriter.WriteHeader(code)
}

// record notes the first final status in the journal.
func (w *statusWriter) record(code int) {
	if !w.wrote && code >= 200 {
		w.wrote = true
		w.journal.update(w.entry, func(e *Entry) { e.Status = code })
	}
}

// Write records an implicit 200 and forwards b, leaving the implicit
// WriteHeader (and Content-Type sniffing) to the underlying writer.
func (w *statusWriter) Write(b []byte) (int, error) {
	w.record(http.StatusOK)
	return w.ResponseWriter.Write(b)
}

// Flush records an implicit 200 and flushes the underlying writer when it can.
func (w *statusWriter) Flush() {
	w.record(http.StatusOK)
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap returns the underlying writer for http.ResponseController.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
