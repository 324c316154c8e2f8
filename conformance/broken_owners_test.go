package conformance

import (
	"cmp"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
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
		{"evicts-busy-session", FamilyCleanup, "at the session cap, closes the session whose last request began longest ago, call in flight or not", evictsBusySession},
		{"evicts-smallest-holder", FamilyCleanup, "at the session cap, closes a session of the client holding the fewest", evictsSmallestHolder},
	}
}

// ownersFocusedSpecs are the specs each owners variant must fail (run IDs).
var ownersFocusedSpecs = map[string][]string{
	"forgets-lost-create":    {"cleanup.lost-create"},
	"sandbox-cap-off-by-one": {"cleanup.session-sandbox-cap"},
	"evicts-busy-session":    {"cleanup.eviction-spares-busy-session"},
	"evicts-smallest-holder": {"cleanup.eviction-from-largest-holder"},
}

// evictsBusySession makes room at the eviction specs' session cap by
// closing the session whose last request began longest ago, as a server
// that reads a call in flight as idleness does (QUOTA-2).
func evictsBusySession() *breakage {
	return evictingFront(busyEvictionCap, func(slots []*frontSlot) *frontSlot {
		return slices.MinFunc(slots, func(a, b *frontSlot) int { return cmp.Compare(a.lastStart, b.lastStart) })
	})
}

// evictsSmallestHolder makes room at the eviction specs' session cap by
// closing a session of the client that holds the fewest, as a server with
// the comparison of QUOTA-3 turned round does.
func evictsSmallestHolder() *breakage {
	return evictingFront(fairEvictionCap, func(slots []*frontSlot) *frontSlot {
		held := map[string]int{}
		for _, s := range slots {
			held[s.client]++
		}
		return slices.MinFunc(slots, func(a, b *frontSlot) int { return cmp.Compare(held[a.client], held[b.client]) })
	})
}

// frontSlot is a legacy HTTP session as evictingFront sees it.
type frontSlot struct {
	id     string
	header http.Header // the headers of the request that opened it
	client string      // its X-Forwarded-For
	// lastStart orders the starts of the session's requests.
	lastStart uint64
}

// evictingFront is a front end that makes room at a cap of limit sessions
// before the reference server sees a newcomer: it ends (DELETE) the session
// pick chooses, so the server's own eviction never runs.
func evictingFront(limit int, pick func([]*frontSlot) *frontSlot) *breakage {
	return &breakage{handler: func(next http.Handler) http.Handler {
		var (
			mu    sync.Mutex
			slots []*frontSlot
			seq   uint64
		)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := r.Header.Get("Mcp-Session-Id")
			mu.Lock()
			seq++
			var victim *frontSlot
			switch {
			case id != "" && r.Method == http.MethodDelete:
				slots = slices.DeleteFunc(slots, func(s *frontSlot) bool { return s.id == id })
			case id != "":
				for _, s := range slots {
					if s.id == id {
						s.lastStart = seq
					}
				}
			case r.Method == http.MethodPost && len(slots) >= limit:
				victim = pick(slots)
				slots = slices.DeleteFunc(slots, func(s *frontSlot) bool { return s == victim })
			}
			mu.Unlock()
			if victim != nil {
				del := r.Clone(r.Context())
				del.Method, del.Body, del.ContentLength = http.MethodDelete, http.NoBody, 0
				del.Header = victim.header.Clone()
				del.Header.Set("Mcp-Session-Id", victim.id)
				next.ServeHTTP(httptest.NewRecorder(), del)
			}
			next.ServeHTTP(w, r)
			if sid := w.Header().Get("Mcp-Session-Id"); id == "" && sid != "" {
				mu.Lock()
				seq++
				slots = append(slots, &frontSlot{id: sid, header: r.Header.Clone(), client: r.Header.Get(forwardedFor), lastStart: seq})
				mu.Unlock()
			}
		})
	}}
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
