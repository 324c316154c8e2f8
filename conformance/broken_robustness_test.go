package conformance

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The broken variants of the robustness specs: each is the reference
// server with one defect the rest of the kit let pass, and the specs
// written to catch it.
func robustnessBrokenVariants() []brokenVariant {
	return []brokenVariant{
		{"background-ignores-max-bytes", FamilyBackground, "ignores get_background_command's max_bytes", backgroundIgnoresMaxBytes},
		{"retries-forbidden", FamilyCleanup, "retries a destroy the provider refused with 403", retriesForbidden},
		{"gives-up-on-other-5xx", FamilyCleanup, "takes a destroy answered 500, 502 or 504 as final (it retries only 503, 429 and resets)", givesUpOnOther5xx},
	}
}

// robustnessFocusedSpecs are the specs each robustness variant must fail
// (run IDs).
var robustnessFocusedSpecs = map[string][]string{
	"background-ignores-max-bytes": {"background.max-bytes-backlog", "background.max-bytes-backlog@2026-07-28"},
	"retries-forbidden":            {"cleanup.close-destroy-forbidden"},
	"gives-up-on-other-5xx":        {"cleanup.close-destroy-retries"},
}

// backgroundIgnoresMaxBytes drops get_background_command's max_bytes: a
// read returns all the output waiting, up to the default cap (BG-2).
var backgroundIgnoresMaxBytes = middlewareOnly(func(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if name, args, ok := toolCall(method, req); ok && name == "get_background_command" {
			delete(args, "max_bytes")
			raw, _ := json.Marshal(args)
			req.(*mcp.CallToolRequest).Params.Arguments = raw
		}
		return next(ctx, method, req)
	}
})

// retriesForbidden sends a destroy refused with 403 a second time
// (SESSION-5: 403 is final).
var retriesForbidden = transportOnly(func(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		if _, ok := sandboxPath(r.URL.Path); ok && r.Method == http.MethodDelete && err == nil && resp.StatusCode == http.StatusForbidden {
			sideRequest(r, rt, http.MethodDelete, r.URL.Path, "")
		}
		return resp, err
	})
})

// givesUpOnOther5xx takes a destroy answered 500, 502 or 504 as final: the
// server's later attempts never reach the provider (SESSION-5: every 5xx
// is transient).
func givesUpOnOther5xx() *breakage {
	var mu sync.Mutex
	final := map[string]bool{}
	return &breakage{transport: func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			id, ok := sandboxPath(r.URL.Path)
			if !ok || r.Method != http.MethodDelete {
				return rt.RoundTrip(r)
			}
			mu.Lock()
			skip := final[id]
			mu.Unlock()
			if skip {
				return pretendNoContent(r), nil
			}
			resp, err := rt.RoundTrip(r)
			if err == nil && resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable {
				mu.Lock()
				final[id] = true
				mu.Unlock()
			}
			return resp, err
		})
	}}
}
