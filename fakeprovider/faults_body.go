package fakeprovider

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// dripWriter is the response writer of a Drip fault: the status line and
// headers go out at once (flushed), then every body byte is written and
// flushed on its own, each one interval after the previous, until the
// request's context ends. Once released, the rest goes out at once.
type dripWriter struct {
	w           http.ResponseWriter
	ctx         context.Context
	released    <-chan struct{}
	interval    time.Duration
	timer       *time.Timer
	wroteHeader bool
}

// newDripWriter wraps w for r. HEAD answers carry no body, so they are not
// wrapped.
func newDripWriter(w http.ResponseWriter, r *http.Request, interval time.Duration, released <-chan struct{}) http.ResponseWriter {
	if r.Method == http.MethodHead {
		return w
	}
	return &dripWriter{w: w, ctx: r.Context(), interval: interval, released: released}
}

// Header returns the underlying header map.
func (d *dripWriter) Header() http.Header { return d.w.Header() }

// WriteHeader sends the status and headers and flushes them, so that the
// client sees them before the first body byte.
func (d *dripWriter) WriteHeader(code int) {
	d.w.WriteHeader(code)
	if code >= 200 && !d.wroteHeader {
		d.wroteHeader = true
		d.Flush()
	}
}

// Write sends b one byte at a time, or what is left of it at once after
// the fault is released. It returns early, with the count of bytes sent,
// when a write fails or the request's context ends.
func (d *dripWriter) Write(b []byte) (int, error) {
	if !d.wroteHeader {
		// Sniff the type from the whole write, as net/http would: the
		// underlying writer only ever sees one byte.
		if _, ok := d.Header()["Content-Type"]; !ok && len(b) > 0 {
			d.Header().Set("Content-Type", http.DetectContentType(b))
		}
		d.WriteHeader(http.StatusOK)
	}
	if len(b) == 0 {
		return d.w.Write(b)
	}
	for i := range b {
		if d.timer == nil {
			d.timer = time.NewTimer(d.interval)
		} else {
			d.timer.Reset(d.interval)
		}
		select {
		case <-d.timer.C:
		case <-d.released:
			d.timer.Stop()
			n, err := d.w.Write(b[i:])
			d.Flush()
			return i + n, err
		case <-d.ctx.Done():
			d.timer.Stop()
			return i, fmt.Errorf("fakeprovider: drip: %w", d.ctx.Err())
		}
		if _, err := d.w.Write(b[i : i+1]); err != nil {
			return i, err
		}
		d.Flush()
	}
	return len(b), nil
}

// Flush flushes the underlying writer when it can.
func (d *dripWriter) Flush() {
	if f, ok := d.w.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap returns the underlying writer for http.ResponseController.
func (d *dripWriter) Unwrap() http.ResponseWriter { return d.w }

// oversizePrefix opens the body of an Oversize fault: a JSON object whose
// first string member never closes.
const oversizePrefix = `{"sandboxID":"`

// oversizeChunk is how many bytes of an oversized body are written at once.
const oversizeChunk = 32 << 10

// writeOversize answers with status and a body of exactly n bytes,
// oversizePrefix then 'a's, generated while it is written from one
// reusable buffer. It stops as soon as a write fails or ctx ends.
func writeOversize(ctx context.Context, w http.ResponseWriter, status int, n int64) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	buf := make([]byte, min(n, oversizeChunk))
	for i := range buf {
		buf[i] = 'a'
	}
	copy(buf, oversizePrefix)
	for left := n; left > 0 && ctx.Err() == nil; {
		k := min(left, int64(len(buf)))
		if _, err := w.Write(buf[:k]); err != nil {
			return
		}
		if left == n {
			// Only the first chunk carries the prefix.
			for i := range min(len(oversizePrefix), len(buf)) {
				buf[i] = 'a'
			}
		}
		left -= k
	}
}
