package fakeprovider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"sync"

	"github.com/jarcoal/httpmock"
)

// RoundTripper returns an http.RoundTripper that serves every request with
// the Provider's handler in-process: no socket, any host. Responses stream:
// each Write (and Flush) of the handler reaches the client's body reader as
// it happens, so envd process streams deliver events over time. Cancelling a
// request's context cancels the handler's, and closing the response body
// ends the handler's writes and cancels its context.
func (p *Provider) RoundTripper() http.RoundTripper { return &inProcessTransport{h: p} }

// HTTPClient returns an *http.Client whose transport is [Provider.RoundTripper].
func (p *Provider) HTTPClient() *http.Client { return &http.Client{Transport: p.RoundTripper()} }

// Register installs on mt a responder for every method and URL that serves
// the request with the Provider's handler (control plane and envd alike),
// streaming as [Provider.RoundTripper] does. It does not call
// httpmock.Activate. Responders registered on mt for exact URLs still take
// precedence.
func (p *Provider) Register(mt *httpmock.MockTransport) {
	rt := p.RoundTripper()
	all := regexp.MustCompile(`.*`)
	for _, m := range []string{
		http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodOptions,
	} {
		mt.RegisterRegexpResponder(m, all, rt.RoundTrip)
	}
}

// inProcessTransport serves requests with h, streaming responses through a pipe.
type inProcessTransport struct {
	h http.Handler
}

// RoundTrip implements http.RoundTripper.
func (t *inProcessTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil {
		closeBody(req)
		return nil, errors.New("fakeprovider: request has no URL")
	}
	ctx, cancel := context.WithCancel(req.Context())
	sreq := serverRequest(ctx, req)

	pr, pw := io.Pipe()
	rw := &pipeWriter{header: make(http.Header), pw: pw, ready: make(chan struct{})}
	// A cancelled client request ends the handler's writes too.
	stop := context.AfterFunc(ctx, func() { _ = pw.CloseWithError(ctx.Err()) })

	go func() {
		defer cancel()
		defer closeBody(req)
		defer func() {
			if v := recover(); v != nil {
				err := fmt.Errorf("fakeprovider: handler panic: %v", v)
				if v == http.ErrAbortHandler {
					err = fmt.Errorf("fakeprovider: handler aborted the response: %w", io.ErrUnexpectedEOF)
				}
				rw.fail(err)
				return
			}
			if err := req.Context().Err(); err != nil {
				// The handler may have ended early because the client gave
				// up: the client's reads report that, not a clean EOF.
				_ = pw.CloseWithError(err)
			}
			rw.finish()
		}()
		t.h.ServeHTTP(rw, sreq)
	}()

	select {
	case <-rw.ready:
	case <-ctx.Done():
	}
	if err := req.Context().Err(); err != nil {
		// The client gave up before the response header (a handler that
		// returned because of that must not look like a success). The pipe
		// is closed and the handler sees its context cancelled.
		stop()
		_ = pr.CloseWithError(err)
		return nil, fmt.Errorf("fakeprovider: %w", context.Cause(req.Context()))
	}
	<-rw.ready
	if rw.err != nil {
		stop()
		return nil, rw.err
	}
	resp := &http.Response{
		Status:        strconv.Itoa(rw.status) + " " + http.StatusText(rw.status),
		StatusCode:    rw.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        rw.sent,
		ContentLength: -1,
		Request:       req,
		Body:          &responseBody{pr: pr, cancel: cancel, stop: stop},
	}
	if cl := rw.sent.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil {
			resp.ContentLength = n
		}
	}
	if req.Method == http.MethodHead {
		resp.Body = http.NoBody
		_ = pr.Close()
	}
	return resp, nil
}

// serverRequest returns the request as a server would see it: same method,
// header and body, a path-only URL, Host and RequestURI set, context ctx.
func serverRequest(ctx context.Context, req *http.Request) *http.Request {
	sreq := req.Clone(ctx)
	u := *req.URL
	u.Scheme, u.Host, u.User = "", "", nil
	sreq.URL = &u
	sreq.RequestURI = req.URL.RequestURI()
	if sreq.Host == "" {
		sreq.Host = req.URL.Host
	}
	sreq.Proto, sreq.ProtoMajor, sreq.ProtoMinor = "HTTP/1.1", 1, 1
	sreq.RemoteAddr = "192.0.2.1:1234"
	if req.Body == nil {
		sreq.Body = http.NoBody
	}
	return sreq
}

// closeBody closes a client request's body, as a RoundTripper must.
func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// pipeWriter is the in-process http.ResponseWriter: the header is handed to
// RoundTrip when written, the body flows through an io.Pipe.
type pipeWriter struct {
	header http.Header
	pw     *io.PipeWriter

	mu     sync.Mutex
	ready  chan struct{} // closed once status and sent (or err) are set
	status int
	sent   http.Header
	err    error // round-trip error when the response never started
}

// Header returns the header map to be sent.
func (w *pipeWriter) Header() http.Header { return w.header }

// WriteHeader sends the status and a snapshot of the header; 1xx statuses
// are ignored.
func (w *pipeWriter) WriteHeader(code int) {
	if code < 200 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sendLocked(code)
}

// sendLocked publishes the response head once.
func (w *pipeWriter) sendLocked(code int) {
	if w.status != 0 || w.err != nil {
		return
	}
	w.status = code
	w.sent = w.header.Clone()
	close(w.ready)
}

// Write sends the header if needed (sniffing Content-Type like net/http),
// then blocks until the client has read b.
func (w *pipeWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	if w.status == 0 && w.err == nil {
		if w.header.Get("Content-Type") == "" && len(b) > 0 {
			w.header.Set("Content-Type", http.DetectContentType(b))
		}
		w.sendLocked(http.StatusOK)
	}
	failed := w.err
	w.mu.Unlock()
	if failed != nil {
		return 0, failed
	}
	n, err := w.pw.Write(b)
	if err != nil {
		return n, fmt.Errorf("fakeprovider: write response: %w", err)
	}
	return n, nil
}

// Flush sends the header if needed. Body bytes need no flushing: each Write
// returns only once the client has read it.
func (w *pipeWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sendLocked(http.StatusOK)
}

// resetConnection fails the round trip (or, once the body has started, the
// body read) with ECONNRESET.
func (w *pipeWriter) resetConnection() { w.fail(errConnReset()) }

// fail ends the exchange with err: RoundTrip returns it when the response
// has not started, else the body read does.
func (w *pipeWriter) fail(err error) {
	w.mu.Lock()
	if w.status == 0 && w.err == nil {
		w.err = err
		close(w.ready)
	}
	w.mu.Unlock()
	_ = w.pw.CloseWithError(err)
}

// finish ends a response whose handler returned normally.
func (w *pipeWriter) finish() {
	w.mu.Lock()
	w.sendLocked(http.StatusOK)
	w.mu.Unlock()
	_ = w.pw.Close()
}

// responseBody is the client's view of the pipe. Closing it ends the
// handler's writes and cancels its context, as a closed connection would.
type responseBody struct {
	pr     *io.PipeReader
	cancel context.CancelFunc
	stop   func() bool
	once   sync.Once
}

// Read reads the next bytes the handler wrote.
func (b *responseBody) Read(p []byte) (int, error) { return b.pr.Read(p) }

// Close closes the body.
func (b *responseBody) Close() error {
	b.once.Do(func() {
		b.stop()
		_ = b.pr.CloseWithError(errBodyClosed())
		b.cancel()
	})
	return nil
}

// errBodyClosed returns the error a handler's Write gets after the client
// closed the response body.
func errBodyClosed() error {
	return fmt.Errorf("fakeprovider: client closed the response body: %w", io.ErrClosedPipe)
}
