package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"sync"
)

// responseProbe records what the HTTP layer saw of one envd call, which the
// Connect library does not expose: the status of a response that failed
// before streaming, whether its body was a Connect error, and whether a
// unary success body was not JSON at all.
type responseProbe struct {
	mu           sync.Mutex
	status       int
	connectError bool // a non-200 body carrying a Connect error code
	malformed    bool // a 200 unary body that is not JSON
	tooLarge     bool // a 200 unary body longer than the transport's maxMessage
}

type probeKey struct{}

// withProbe returns a context whose envd requests record into a new probe.
func withProbe(ctx context.Context) context.Context {
	return context.WithValue(ctx, probeKey{}, &responseProbe{})
}

func probeFrom(ctx context.Context) *responseProbe {
	p, _ := ctx.Value(probeKey{}).(*responseProbe)
	return p
}

// probingTransport fills the probe of each request's context.
type probingTransport struct {
	base       http.RoundTripper
	maxMessage int // the bound on a unary answer read whole (Options.MaxResponseBytes)
}

func (t probingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	probe := probeFrom(req.Context())
	if err != nil || probe == nil {
		return resp, err
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	probe.mu.Lock()
	defer probe.mu.Unlock()
	probe.status = resp.StatusCode
	switch {
	case resp.StatusCode != http.StatusOK:
		body := peekPrefix(resp, maxErrorBody)
		var ce struct {
			Code string `json:"code"`
		}
		probe.connectError = mediaType == "application/json" && json.Unmarshal(body, &ce) == nil && ce.Code != ""
	case mediaType == "application/json":
		// A unary answer: small, so it can be checked whole. One that could
		// not be read in time (or at all) is not judged here: the call
		// fails with the read's own error.
		body, tooLarge, err := peekBody(resp, t.maxMessage)
		switch {
		case err != nil:
		case tooLarge:
			// Refused unparsed: the call fails at once, not after the
			// Connect library reads it all again.
			probe.tooLarge = true
			resp.Body.Close()
			resp.Body = io.NopCloser(errReader{errResponseTooLarge})
		default:
			probe.malformed = !json.Valid(body)
		}
	case mediaType != "application/connect+json":
		probe.malformed = true
	}
	return resp, nil
}

// peekPrefix reads up to limit bytes of the body and puts them back in
// front of the rest.
func peekPrefix(resp *http.Response, limit int64) []byte {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, limit))
	putBack(resp, data)
	return data
}

// peekBody reads the body to its end, when it holds at most limit bytes,
// and puts what it read back. It returns the read's error, if any, and
// whether the body is longer than limit: then nothing is put back, and
// the body must not be used.
func peekBody(resp *http.Response, limit int) (data []byte, tooLarge bool, err error) {
	data, tooLarge, err = readBounded(resp.Body, limit)
	if !tooLarge {
		putBack(resp, data)
	}
	return data, tooLarge, err
}

// putBack makes data the start of the body again.
func putBack(resp *http.Response, data []byte) {
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(data), resp.Body), resp.Body}
}

// probedClient wraps an HTTP client so its envd requests fill probes;
// maxMessage bounds a unary answer read whole.
func probedClient(c *http.Client, maxMessage int) *http.Client {
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	return &http.Client{Transport: probingTransport{base: base, maxMessage: maxMessage}, CheckRedirect: c.CheckRedirect, Jar: c.Jar, Timeout: c.Timeout}
}

// probedError refines a failed call's error with what its probe saw: a
// non-Connect error answer is classified by its HTTP status, a Connect
// error keeps its code and gains the status, and an unreadable success is a
// provider error.
func probedError(ctx context.Context, e *Error) *Error {
	probe := probeFrom(ctx)
	if probe == nil || e == nil {
		return e
	}
	probe.mu.Lock()
	defer probe.mu.Unlock()
	switch {
	case probe.status != 0 && probe.status != http.StatusOK && !probe.connectError:
		return statusError(e.Op, probe.status, "")
	case probe.status != 0 && probe.status != http.StatusOK:
		e.HTTPStatus = probe.status
	case probe.tooLarge:
		return &Error{Op: e.Op, Category: ProviderError, HTTPStatus: probe.status, Code: CodeResponseTooLarge}
	case probe.malformed:
		return &Error{Op: e.Op, Category: ProviderError, HTTPStatus: probe.status, Code: CodeMalformedResponse}
	}
	return e
}

// errResponseTooLarge is what reading a refused envd answer gives.
var errResponseTooLarge = errors.New("sandbox: envd answer too large")

// errReader is a body whose every read fails with err.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
