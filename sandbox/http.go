package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// apiRequest is one control-plane call.
type apiRequest struct {
	op     string     // route constant, e.g. OpGetSandbox
	path   string     // concrete path, e.g. /sandboxes/abc
	query  url.Values // may be nil
	body   any        // JSON-encoded when non-nil
	ok     []int      // accepted statuses
	out    any        // decoded from JSON when non-nil
	oneOff bool       // run on temporary transport resources
}

// apiError is the platform's error body. Only error_code is ever kept.
type apiError struct {
	Code      int    `json:"code"`
	ErrorCode string `json:"error_code"`
}

// call performs req against ep and returns the response headers.
func (p *Platform) call(ctx context.Context, ep endpoint, req apiRequest) (http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, p.requestTimeout)
	defer cancel()

	client := p.httpClient
	if req.oneOff {
		var release func()
		client, release = p.temporaryClient()
		defer release()
	}

	var body io.Reader
	if req.body != nil {
		data, err := json.Marshal(req.body)
		if err != nil {
			return nil, &Error{Op: req.op, Category: Internal}
		}
		body = bytes.NewReader(data)
	}
	u := ep.apiURL + req.path
	if len(req.query) > 0 {
		u += "?" + req.query.Encode()
	}
	method, _, _ := strings.Cut(req.op, " ")
	hreq, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, &Error{Op: req.op, Category: Internal}
	}
	hreq.Header.Set("X-API-Key", ep.apiKey)
	hreq.Header.Set("User-Agent", p.userAgent)
	hreq.Header.Set("Accept", "application/json")
	if body != nil {
		hreq.Header.Set("Content-Type", "application/json")
	}
	hreq.Close = req.oneOff

	resp, err := client.Do(hreq)
	if err != nil {
		return nil, transportError(req.op, err)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
	}()

	if !statusIn(resp.StatusCode, req.ok) {
		var ae apiError
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		_ = json.Unmarshal(data, &ae)
		return nil, statusError(req.op, resp.StatusCode, ae.ErrorCode)
	}
	if req.out == nil && resp.StatusCode != http.StatusNoContent {
		// A route whose success carries no data, answered with a body: it
		// must be JSON (an HTML page from a proxy, say, means the platform
		// did not do it).
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody+1))
		if err != nil {
			return nil, transportError(req.op, err)
		}
		if len(bytes.TrimSpace(data)) > 0 && (len(data) > maxErrorBody || !json.Valid(data)) {
			return nil, &Error{Op: req.op, Category: ProviderError, HTTPStatus: resp.StatusCode, Code: CodeMalformedResponse}
		}
	}
	if req.out != nil {
		data, tooLarge, err := readBounded(resp.Body, p.maxResponse) // Options.MaxResponseBytes
		if err != nil {
			return nil, transportError(req.op, err)
		}
		if tooLarge {
			// Not parsed: no answer of the platform comes near the bound.
			return nil, &Error{Op: req.op, Category: ProviderError, HTTPStatus: resp.StatusCode, Code: CodeResponseTooLarge}
		}
		if err := json.Unmarshal(data, req.out); err != nil {
			return nil, &Error{Op: req.op, Category: ProviderError, HTTPStatus: resp.StatusCode, Code: CodeMalformedResponse}
		}
	}
	return resp.Header, nil
}

func statusIn(status int, ok []int) bool {
	for _, s := range ok {
		if s == status {
			return true
		}
	}
	return false
}

// temporaryClient returns a client whose connections are closed when
// release is called, so that a by-ID call leaves nothing open behind it.
// A standard transport is cloned; any other round tripper (an in-process
// fake, httpmock) is used as it is, with requests marked Connection: close.
func (p *Platform) temporaryClient() (*http.Client, func()) {
	var rt http.RoundTripper
	switch t := p.httpClient.Transport.(type) {
	case nil:
		rt = http.DefaultTransport.(*http.Transport).Clone()
	case *http.Transport:
		rt = t.Clone()
	default:
		return &http.Client{Transport: t, CheckRedirect: p.httpClient.CheckRedirect, Jar: p.httpClient.Jar}, func() {}
	}
	tr := rt.(*http.Transport)
	tr.DisableKeepAlives = true
	c := &http.Client{Transport: tr, CheckRedirect: p.httpClient.CheckRedirect, Jar: p.httpClient.Jar}
	return c, tr.CloseIdleConnections
}
