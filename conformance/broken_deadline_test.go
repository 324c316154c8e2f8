package conformance

import (
	"context"
	"net/http"
)

// The broken variants the deadline specs must catch.

// ignoresProviderDeadline sends every provider request on a context that
// never ends: the server waits for as long as the provider takes.
var ignoresProviderDeadline = transportOnly(func(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return rt.RoundTrip(r.WithContext(context.WithoutCancel(r.Context())))
	})
})

// abandonsProviderRequests gives up on a provider request when its context
// ends, in time, but leaves the request running (and a goroutine waiting
// on it): it never cancels what it abandons.
var abandonsProviderRequests = transportOnly(func(rt http.RoundTripper) http.RoundTripper {
	type answer struct {
		resp *http.Response
		err  error
	}
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		done := make(chan answer, 1)
		go func() {
			resp, err := rt.RoundTrip(r.WithContext(context.WithoutCancel(r.Context())))
			done <- answer{resp, err}
		}()
		select {
		case a := <-done:
			return a.resp, a.err
		case <-r.Context().Done():
			go func() { // close what arrives after all
				if a := <-done; a.resp != nil {
					a.resp.Body.Close()
				}
			}()
			return nil, r.Context().Err()
		}
	})
})

// ignoresMaxBytes drops download_file's max_bytes: a download returns up to
// the default cap whatever the caller asked for.
var ignoresMaxBytes = dropsArgument("download_file", "max_bytes")
