package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/server"
)

// The broken variants of the two eras (section 13, TOOLS-4, TOOLS-6): each
// is the reference server with one defect a dual-era server can have.
func eraBrokenVariants() []brokenVariant {
	return []brokenVariant{
		{"initialize-negotiates-2026", FamilyProtocol, "answers an initialize offering 2026-07-28 with that sessionless version", initializeNegotiates2026},
		{"discover-without-2026", FamilyProtocol, "leaves 2026-07-28 out of server/discover", discoverWithout2026},
		{"modern-get-200", FamilyProtocol, "answers a modern GET with 200 and mints a session for a modern POST", modernGet200},
		{"tools-list-differs-by-era", FamilyProtocol, "describes a tool differently to modern requests", toolsListDiffersByEra},
		{"default-carries-across-modern-requests", FamilyLease, "names the sandbox an earlier modern request created when a call has no sandbox_id", defaultCarriesAcrossModern},
		{"lease-past-policy-at-create", FamilyLease, "creates a sandbox with twice its policy", leasePastPolicyAtCreate},
		{"renews-past-policy", FamilyLease, "renews a leased sandbox to twice its policy after each call", renewsPastPolicy},
		{"per-request-session-destroys", FamilyLease, "runs each modern request in a session of its own, whose end destroys what it created", perRequestSessionDestroys},
		{"renews-by-own-default", FamilyLease, "renews a sandbox by a 30 s policy of its own instead of the create-time one", renewsByOwnDefault},
		{"renews-in-background", FamilyLease, "renews every sandbox it created in the background, forever", renewsInBackground},
		{"not-found-as-protocol-error", FamilyHandles, "answers an unknown handle with a JSON-RPC error", notFoundAsProtocolError},
		{"sequential-command-ids", FamilyHandles, "issues command_ids bg-1, bg-2, ...", sequentialCommandIDs},
		{"handles-across-principals", FamilyHandles, "gives every token the same principal", handlesAcrossPrincipals},
		{"session-across-principals", FamilyHandles, "looks a legacy session up by its Mcp-Session-Id alone, as the principal that opened it", sessionAcrossPrincipals},
		{"session-delete-across-principals", FamilyHandles, "answers another principal's DELETE of a session 403, but ends the session and destroys its sandboxes first", sessionDeleteAcrossPrincipals},
	}
}

// eraFocusedSpecs are the specs each era variant must fail (run IDs).
var eraFocusedSpecs = map[string][]string{
	"initialize-negotiates-2026":             {"protocol.initialize-offering-2026"},
	"discover-without-2026":                  {"protocol.discover-versions"},
	"modern-get-200":                         {"protocol.modern-http-sessionless"},
	"tools-list-differs-by-era":              {"protocol.tools-list-across-eras"},
	"default-carries-across-modern-requests": {"lease.modern-no-default@2026-07-28"},
	"lease-past-policy-at-create":            {"lease.end-at-create@2026-07-28"},
	"renews-past-policy":                     {"lease.renewal-bounded@2026-07-28"},
	"per-request-session-destroys":           {"lease.outlives-connection@2026-07-28"},
	"renews-by-own-default":                  {"lease.policy-travels@2026-07-28"},
	"renews-in-background":                   {"lease.quiet-after-requests@2026-07-28"},
	"not-found-as-protocol-error":            {"handles.gone-not-found@2026-07-28"},
	"sequential-command-ids":                 {"handles.command-id-entropy@2026-07-28"},
	"handles-across-principals":              {"handles.bound-to-principal@2026-07-28"},
	"session-across-principals":              {"handles.session-bound-to-principal"},
	"session-delete-across-principals":       {"handles.session-bound-to-principal"},
}

// isModernRequest reports whether req carries a 2026-07-28 _meta.
func isModernRequest(req mcp.Request) bool {
	p := req.GetParams()
	if p == nil {
		return false
	}
	v, _ := p.GetMeta()["io.modelcontextprotocol/protocolVersion"].(string)
	return isModernVersion(v)
}

// afterCall runs edit after every successful modern call of tool.
func afterCall(tool string, edit func(ctx context.Context, env breakEnv, args map[string]any, res *mcp.CallToolResult)) func() *breakage {
	return func() *breakage {
		return &breakage{middleware: func(env breakEnv) mcp.Middleware {
			return func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					res, err := next(ctx, method, req)
					name, args, ok := toolCall(method, req)
					r, isCall := res.(*mcp.CallToolResult)
					if ok && err == nil && isCall && !r.IsError && name == tool && isModernRequest(req) {
						edit(ctx, env, args, r)
					}
					return res, err
				}
			}
		}}
	}
}

// provider sends one request to the provider's API as the server would.
func provider(ctx context.Context, env breakEnv, method, path, body string) {
	req, err := http.NewRequestWithContext(ctx, method, env.apiURL+path, strings.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("X-API-Key", env.apiKey)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := env.rt.RoundTrip(req); err == nil {
		_ = resp.Body.Close()
	}
}

func structured(r *mcp.CallToolResult, key string) string {
	data, _ := json.Marshal(r.StructuredContent)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	s, _ := m[key].(string)
	return s
}

func policyOf(args map[string]any) int {
	if t, ok := args["timeout"].(float64); ok && t > 0 {
		return int(t)
	}
	return 300
}

var leasePastPolicyAtCreate = afterCall("create_sandbox", func(ctx context.Context, env breakEnv, args map[string]any, r *mcp.CallToolResult) {
	provider(ctx, env, http.MethodPost, "/sandboxes/"+structured(r, "sandbox_id")+"/timeout", fmt.Sprintf(`{"timeout":%d}`, 2*policyOf(args)))
})

var renewsPastPolicy = afterCall("run_command", func(ctx context.Context, env breakEnv, args map[string]any, _ *mcp.CallToolResult) {
	id, _ := args["sandbox_id"].(string)
	provider(ctx, env, http.MethodPost, "/sandboxes/"+id+"/timeout", `{"timeout":900}`)
})

var renewsByOwnDefault = afterCall("run_command", func(ctx context.Context, env breakEnv, args map[string]any, _ *mcp.CallToolResult) {
	id, _ := args["sandbox_id"].(string)
	provider(ctx, env, http.MethodPost, "/sandboxes/"+id+"/timeout", `{"timeout":30}`)
})

// perRequestSessionDestroys is the naive dual-era server: each modern
// request gets a session of its own, and that session's end destroys the
// sandbox the request created (LEASE-3).
var perRequestSessionDestroys = afterCall("create_sandbox", func(ctx context.Context, env breakEnv, _ map[string]any, r *mcp.CallToolResult) {
	provider(ctx, env, http.MethodDelete, "/sandboxes/"+structured(r, "sandbox_id"), "")
})

// renewsInBackground keeps renewing every sandbox it created, on a ticker
// that never stops (until the server's process ends).
func renewsInBackground() *breakage {
	var once sync.Once
	var mu sync.Mutex
	var ids []string
	b := afterCall("create_sandbox", func(ctx context.Context, env breakEnv, _ map[string]any, r *mcp.CallToolResult) {
		mu.Lock()
		ids = append(ids, structured(r, "sandbox_id"))
		mu.Unlock()
		once.Do(func() {
			go func() {
				for range time.Tick(time.Millisecond) {
					mu.Lock()
					all := append([]string(nil), ids...)
					mu.Unlock()
					for _, id := range all {
						provider(context.Background(), env, http.MethodPost, "/sandboxes/"+id+"/timeout", `{"timeout":120}`)
					}
				}
			}()
		})
	})()
	return b
}

// defaultCarriesAcrossModern is the stdio server whose default carries
// across modern requests: a call without sandbox_id gets the sandbox the
// last modern create made (MODERN-1).
func defaultCarriesAcrossModern() *breakage {
	var mu sync.Mutex
	last := ""
	return &breakage{middleware: func(breakEnv) mcp.Middleware {
		return func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				name, args, ok := toolCall(method, req)
				if ok && isModernRequest(req) && takesSandboxID(name) && args["sandbox_id"] == nil {
					mu.Lock()
					if last != "" {
						args["sandbox_id"] = last
						req.(*mcp.CallToolRequest).Params.Arguments, _ = json.Marshal(args)
					}
					mu.Unlock()
				}
				res, err := next(ctx, method, req)
				if r, isCall := res.(*mcp.CallToolResult); ok && name == "create_sandbox" && err == nil && isCall && !r.IsError {
					mu.Lock()
					last = structured(r, "sandbox_id")
					mu.Unlock()
				}
				return res, err
			}
		}
	}}
}

func notFoundAsProtocolError() *breakage {
	return &breakage{middleware: func(breakEnv) mcp.Middleware {
		return func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				res, err := next(ctx, method, req)
				if r, ok := res.(*mcp.CallToolResult); ok && err == nil && r.IsError && len(r.Content) > 0 {
					if tc, ok := r.Content[0].(*mcp.TextContent); ok && strings.Contains(tc.Text, `"not_found"`) {
						return nil, fmt.Errorf("internal error")
					}
				}
				return res, err
			}
		}
	}}
}

// sequentialCommandIDs hands out bg-1, bg-2, ... for the server's
// command_ids and translates them back on the way in (HANDLE-2).
func sequentialCommandIDs() *breakage {
	var mu sync.Mutex
	toReal, toShort := map[string]string{}, map[string]string{}
	return &breakage{middleware: func(breakEnv) mcp.Middleware {
		return func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				name, args, ok := toolCall(method, req)
				if short, isStr := args["command_id"].(string); ok && isStr {
					mu.Lock()
					if real, known := toReal[short]; known {
						args["command_id"] = real
						req.(*mcp.CallToolRequest).Params.Arguments, _ = json.Marshal(args)
					}
					mu.Unlock()
				}
				res, err := next(ctx, method, req)
				if ok && name == "start_background_command" && err == nil {
					editToolResult(res, func(m map[string]any) {
						real, _ := m["command_id"].(string)
						mu.Lock()
						short := fmt.Sprintf("bg-%d", len(toReal)+1)
						toReal[short], toShort[real] = real, short
						mu.Unlock()
						m["command_id"] = short
					})
				}
				return res, err
			}
		}
	}}
}

// handlesAcrossPrincipals gives every token of the kit's principal
// listener the same principal (HANDLE-1).
func handlesAcrossPrincipals() *breakage {
	return &breakage{http: func(o *server.HTTPOptions) {
		for tok := range o.Tokens {
			o.Tokens[tok] = "everyone"
		}
	}}
}

// sessionAcrossPrincipals authenticates every request but then serves a
// request that names a session as the principal that opened it: the
// session lookup ignores who asks (HANDLE-4). It does so by giving such a
// request the opener's token, so the server below takes it for the
// opener's own.
func sessionAcrossPrincipals() *breakage {
	return &breakage{handler: func(next http.Handler) http.Handler {
		return withOpeners(next, func(w http.ResponseWriter, r *http.Request, opener string) {
			r.Header.Set("Authorization", opener)
			next.ServeHTTP(w, r)
		})
	}}
}

// sessionDeleteAcrossPrincipals is the reference server before it bound
// its own end of a session to the principal (HANDLE-4): the SDK refuses
// another principal's DELETE, but the server has already ended the
// session and destroyed its sandboxes. Only the journal shows it.
func sessionDeleteAcrossPrincipals() *breakage {
	return &breakage{handler: func(next http.Handler) http.Handler {
		return withOpeners(next, func(w http.ResponseWriter, r *http.Request, opener string) {
			if r.Method == http.MethodDelete {
				end := r.Clone(r.Context())
				end.Header.Set("Authorization", opener)
				next.ServeHTTP(httptest.NewRecorder(), end)
			}
			next.ServeHTTP(w, r)
		})
	}}
}

// withOpeners serves next, but hands a request that carries a known
// principal's token and another principal's session ID to other, with the
// Authorization that opened the session.
func withOpeners(next http.Handler, other func(w http.ResponseWriter, r *http.Request, opener string)) http.Handler {
	var openers sync.Map // Mcp-Session-Id -> the Authorization that opened it
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, auth := r.Header.Get("Mcp-Session-Id"), r.Header.Get("Authorization")
		if opener, ok := openers.Load(id); ok && id != "" && opener != auth && knownToken(auth) {
			other(w, r, opener.(string))
			return
		}
		next.ServeHTTP(w, r)
		if sid := w.Header().Get("Mcp-Session-Id"); id == "" && sid != "" {
			openers.LoadOrStore(sid, auth)
		}
	})
}

// knownToken reports whether auth carries one of the in-process
// principals' tokens: the broken variant still refuses a stranger.
func knownToken(auth string) bool {
	return auth == "Bearer "+inProcessTokens[0] || auth == "Bearer "+inProcessTokens[1]
}

func initializeNegotiates2026() *breakage {
	return &breakage{middleware: func(breakEnv) mcp.Middleware {
		return func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				res, err := next(ctx, method, req)
				if ir, ok := res.(*mcp.InitializeResult); ok && err == nil {
					if p, ok := req.GetParams().(*mcp.InitializeParams); ok && p.ProtocolVersion == ModernProtocolVersion {
						ir.ProtocolVersion = ModernProtocolVersion
					}
				}
				return res, err
			}
		}
	}}
}

func discoverWithout2026() *breakage {
	return &breakage{middleware: func(breakEnv) mcp.Middleware {
		return func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				res, err := next(ctx, method, req)
				if dr, ok := res.(*mcp.DiscoverResult); ok && err == nil {
					var kept []string
					for _, v := range dr.SupportedVersions {
						if v != ModernProtocolVersion {
							kept = append(kept, v)
						}
					}
					dr.SupportedVersions = kept
				}
				return res, err
			}
		}
	}}
}

func toolsListDiffersByEra() *breakage {
	return &breakage{middleware: func(breakEnv) mcp.Middleware {
		return func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				res, err := next(ctx, method, req)
				if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil && isModernRequest(req) && len(lr.Tools) > 0 {
					t := *lr.Tools[0]
					t.Description += " (2026-07-28: sandbox_id required)"
					lr.Tools = append([]*mcp.Tool{&t}, lr.Tools[1:]...)
				}
				return res, err
			}
		}
	}}
}

// modernGet200 answers a modern GET with 200 before the server sees it.
func modernGet200() *breakage {
	return &breakage{handler: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && isModernVersion(r.Header.Get("MCP-Protocol-Version")) {
				w.WriteHeader(http.StatusOK)
				return
			}
			next.ServeHTTP(w, r)
		})
	}}
}
