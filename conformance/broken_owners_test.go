package conformance

import (
	"io"
	"net/http"
	"strings"

	"github.com/sandboxkit/sandboxkit/server"
)

// The broken variants of the owners specs: the reference server with one
// defect in what it owns when an answer is lost.
func ownersBrokenVariants() []brokenVariant {
	return []brokenVariant{
		{"forgets-lost-create", FamilyCleanup, "forgets a create whose answer never came: its check for the sandbox finds nothing", forgetsLostCreate},
	}
}

// ownersFocusedSpecs are the specs each owners variant must fail (run IDs).
var ownersFocusedSpecs = map[string][]string{
	"forgets-lost-create": {"cleanup.lost-create"},
}

// forgetsLostCreate answers every listing by a create nonce with an empty
// page, as a server that looks for a lost create once, at once, or never:
// a sandbox the platform makes later is never found (LOST-1).
var forgetsLostCreate = transportOnly(func(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method != http.MethodGet || !strings.Contains(r.URL.Query().Get("metadata"), server.CreateTagKey+"=") {
			return rt.RoundTrip(r)
		}
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader("[]")), ContentLength: 2, Request: r}, nil
	})
})
