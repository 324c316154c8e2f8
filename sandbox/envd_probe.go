package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
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
type probingTransport struct{ base http.RoundTripper }

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
		body, _ := peekBody(resp, maxErrorBody)
		var ce struct {
			Code string `json:"code"`
		}
		probe.connectError = mediaType == "application/json" && json.Unmarshal(body, &ce) == nil && ce.Code != ""
	case mediaType == "application/json":
		// A unary answer: small, so it can be checked whole. One that could
		// not be read in time (or at all) is not judged here: the call
		// fails with the read's own error.
		body, err := peekBody(resp, maxEnvdMessage)
		probe.malformed = err == nil && !json.Valid(body)
	case mediaType != "application/connect+json":
		probe.malformed = true
	}
	return resp, nil
}

// peekBody reads up to limit bytes of the body and puts them back in front
// of the rest. It returns the read's error, if any.
func peekBody(resp *http.Response, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(data), resp.Body), resp.Body}
	return data, err
}

// probedClient wraps an HTTP client so its envd requests fill probes.
func probedClient(c *http.Client) *http.Client {
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	return &http.Client{Transport: probingTransport{base: base}, CheckRedirect: c.CheckRedirect, Jar: c.Jar, Timeout: c.Timeout}
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
	case probe.malformed:
		return &Error{Op: e.Op, Category: ProviderError, HTTPStatus: probe.status, Code: "malformed_response"}
	}
	return e
}
