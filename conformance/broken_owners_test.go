package conformance

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/server"
)

// The broken variants of the owners specs: the reference server with one
// defect in what it owns when an answer is lost.
func ownersBrokenVariants() []brokenVariant {
	return []brokenVariant{
		{"forgets-lost-create", FamilyCleanup, "forgets a create whose answer never came: its check for the sandbox finds nothing", forgetsLostCreate},
		{"sandbox-cap-off-by-one", FamilyCleanup, "refuses a session's create once it owns one sandbox fewer than its declared cap", sandboxCapOffByOne},
	}
}

// ownersFocusedSpecs are the specs each owners variant must fail (run IDs).
var ownersFocusedSpecs = map[string][]string{
	"forgets-lost-create":    {"cleanup.lost-create"},
	"sandbox-cap-off-by-one": {"cleanup.session-sandbox-cap"},
}

// sandboxCapOffByOne counts each session's live creates and refuses a
// create at the declared cap minus one: the cap-th sandbox is never made
// (QUOTA-1).
func sandboxCapOffByOne() *breakage {
	var mu sync.Mutex
	owned := map[*mcp.ServerSession]int{}
	refuse := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
		Text: `{"error":{"category":"rate_limited","code":"too_many_sandboxes","message":"too many sandboxes"}}`}}}
	return &breakage{middleware: func(breakEnv) mcp.Middleware {
		return func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				name, _, ok := toolCall(method, req)
				ss, _ := req.GetSession().(*mcp.ServerSession)
				if !ok || ss == nil || (name != "create_sandbox" && name != "kill_sandbox") {
					return next(ctx, method, req)
				}
				mu.Lock()
				full := name == "create_sandbox" && owned[ss] >= server.DefaultSandboxesPerSession-1
				mu.Unlock()
				if full {
					return refuse, nil
				}
				res, err := next(ctx, method, req)
				if r, isTool := res.(*mcp.CallToolResult); err == nil && isTool && !r.IsError {
					mu.Lock()
					if name == "create_sandbox" {
						owned[ss]++
					} else {
						owned[ss]--
					}
					mu.Unlock()
				}
				return res, err
			}
		}
	}}
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
