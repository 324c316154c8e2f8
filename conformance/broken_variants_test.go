package conformance

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
	"github.com/sandboxkit/sandboxkit/internal/fakeenvd"
	"github.com/sandboxkit/sandboxkit/server"
)

// brokenVariant is the reference server with one deliberate defect, and
// the family of specs that must catch it.
type brokenVariant struct {
	name   string
	family Family
	defect string
	make   func() *breakage
}

// focusedSpecs names, for some variants, the specs written for that kind
// of defect: the variant's child run runs only them (the rest of the
// family would wait out every deadline the variant ignores, or repeat the
// proof at many times its cost), and each must fail.
var focusedSpecs = map[string][]string{
	"ignores-provider-deadline":  {"errors.hang", "errors.drip"},
	"abandons-provider-requests": {"errors.hang"},
	"ignores-max-bytes":          {"errors.oversized"},
	"empty-id-is-default":        {"bounds.empty-id-with-default"},
	"races-implicit-create":      {"default.concurrent-implicit-create"},
	"connect-renews-external":    {"renewal.external-keeps-end-time"},
	"renews-only-on-success":     {"renewal.failed-calls-renew"},
	"passes-time-offsets":        {"leakage.metadata-times-in-utc"},
	"destroys-once":              {"cleanup.close-destroy-retries"},
	"retries-unauthorized":       {"cleanup.close-destroy-unauthorized"},
	"pools-by-id-connections":    {"delegation.by-id-releases-connections"},
	"ignores-idle-timeout":       {"cleanup.idle-timeout"},
	"shutdown-skips-cleanup":     {"cleanup.shutdown"},
	"skips-cleanup":              {"cleanup.close-destroys-owned"},
	"corrupts-download":          {"binary.all-byte-values-round-trip"},
	"url-never-expires":          {"binary.url-expires"},
	"url-carries-access-token":   {"binary.url-no-secrets"},
	"url-for-other-path":         {"binary.url-download-round-trip", "binary.url-upload-round-trip"},
}

// brokenVariants are the kit's power test: each must make at least one
// spec of its family fail.
func brokenVariants() []brokenVariant {
	return append([]brokenVariant{
		{"echoes-invalid-value", FamilyBounds, "puts the submitted arguments into validation errors", echoesInvalidValue},
		{"empty-id-is-default", FamilyBounds, `reads sandbox_id "" as the session's default`, emptyIDIsDefault},
		{"calls-provider-before-validating", FamilyBounds, "lists sandboxes before validating a call", callsProviderBeforeValidating},
		{"pools-by-id-connections", FamilyDelegation, "keeps the connections of by-ID calls open in a pool of its own", poolsByIDConnections},
		{"connects-for-external-get", FamilyDelegation, "calls connect before reading an external sandbox", connectsForExternalGet},
		{"races-implicit-create", FamilyDefault, "creates a default for each concurrent call that finds none", racesImplicitCreate},
		{"creates-in-get", FamilyDefault, "creates a sandbox when get_sandbox has no default", createsInGet},
		{"connect-renews-external", FamilyRenewal, "asks the default lifetime on every connect, extending external sandboxes", connectRenewsExternal},
		{"renews-only-on-success", FamilyRenewal, "skips the renewal after a call the daemon answered with an error", renewsOnlyOnSuccess},
		{"renews-after-close", FamilyRenewal, "renews a sandbox after destroying it", renewsAfterClose},
		{"passes-time-offsets", FamilyLeakage, "passes the platform's time strings through, offset and all", passesTimeOffsets},
		{"leaks-access-token", FamilyLeakage, "adds the sandbox's envd access token to metadata results", leaksAccessToken},
		{"passes-provider-message", FamilyErrors, "appends the provider's raw error message to tool errors", passesProviderMessage},
		{"ignores-provider-deadline", FamilyErrors, "waits for the provider as long as it takes", ignoresProviderDeadline},
		{"abandons-provider-requests", FamilyErrors, "stops waiting for the provider at its deadline without cancelling the request", abandonsProviderRequests},
		{"ignores-max-bytes", FamilyErrors, "ignores download_file's max_bytes", ignoresMaxBytes},
		{"destroys-external-at-close", FamilyCleanup, "destroys every sandbox it has seen when it destroys one", destroysExternalAtClose},
		{"destroys-once", FamilyCleanup, "gives up a close-time destroy after its first failure", destroysOnce},
		{"retries-unauthorized", FamilyCleanup, "retries a destroy the provider refused with 401", retriesUnauthorized},
		{"ignores-idle-timeout", FamilyCleanup, "never closes an idle Streamable HTTP session", ignoresIdleTimeout},
		{"shutdown-skips-cleanup", FamilyCleanup, "shuts down without destroying its sessions' sandboxes", shutdownSkipsCleanup},
		{"skips-cleanup", FamilyCleanup, "never destroys sandboxes", skipsCleanup},
		{"nonzero-exit-is-error", FamilyExec, "reports a non-zero exit as a tool error", nonzeroExitIsError},
		{"read-file-drops-last-byte", FamilyFiles, "drops the last byte of read_file content", readFileDropsLastByte},
		{"loses-background-output", FamilyBackground, "drops a byte of every background output read", losesBackgroundOutput},
		{"corrupts-download", FamilyBinary, "flips a byte of downloaded data", corruptsDownload},
		{"url-never-expires", FamilyBinary, "signs transfer URLs without an expiration", urlNeverExpires},
		{"url-carries-access-token", FamilyBinary, "puts the envd access token into transfer URLs", urlCarriesAccessToken},
		{"url-for-other-path", FamilyBinary, "signs transfer URLs for a sibling of the path asked for", urlForOtherPath},
		{"wrong-read-only-hint", FamilyProtocol, "marks get_sandbox as not read-only", wrongReadOnlyHint},
		{"run-command-not-destructive", FamilyProtocol, "marks run_command, which runs arbitrary code, as not destructive", runCommandNotDestructive},
		{"error-in-structured-content", FamilyDefault, "puts the error object back into the structuredContent of tool errors", errorInStructuredContent},
	}, slices.Concat(eraBrokenVariants(), robustnessBrokenVariants(), wireBrokenVariants(), ownersBrokenVariants(), bindBrokenVariants())...)
}

// pretendNoContent is the 204 a variant answers itself for a request it
// never sends to the provider.
func pretendNoContent(r *http.Request) *http.Response {
	return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Header: http.Header{}, Request: r}
}

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// toolCall returns the tool name and arguments of a tools/call request.
func toolCall(method string, req mcp.Request) (string, map[string]any, bool) {
	if method != "tools/call" {
		return "", nil, false
	}
	ctr, ok := req.(*mcp.CallToolRequest)
	if !ok || ctr.Params == nil {
		return "", nil, false
	}
	var args map[string]any
	_ = json.Unmarshal(ctr.Params.Arguments, &args)
	return ctr.Params.Name, args, true
}

// editToolResult rewrites a successful result's structuredContent and its
// text block together, so the defect is the only thing wrong.
func editToolResult(res mcp.Result, edit func(m map[string]any)) {
	r, ok := res.(*mcp.CallToolResult)
	if !ok || r.IsError || r.StructuredContent == nil {
		return
	}
	data, _ := json.Marshal(r.StructuredContent)
	var m map[string]any
	if json.Unmarshal(data, &m) != nil {
		return
	}
	edit(m)
	data, _ = json.Marshal(m)
	r.StructuredContent = m
	r.Content = []mcp.Content{&mcp.TextContent{Text: string(data)}}
}

// appendText adds text to a tool error's text block.
func appendText(res mcp.Result, extra string) {
	r, ok := res.(*mcp.CallToolResult)
	if !ok || !r.IsError {
		return
	}
	r.Content = append(r.Content, &mcp.TextContent{Text: extra})
}

func middlewareOnly(mw func(next mcp.MethodHandler) mcp.MethodHandler) func() *breakage {
	return func() *breakage {
		return &breakage{middleware: func(breakEnv) mcp.Middleware { return mw }}
	}
}

// dropsArgument is a variant that removes arg from every call of tool
// before the server reads it.
func dropsArgument(tool, arg string) func() *breakage {
	return middlewareOnly(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if name, args, ok := toolCall(method, req); ok && name == tool {
				delete(args, arg)
				raw, _ := json.Marshal(args)
				req.(*mcp.CallToolRequest).Params.Arguments = raw
			}
			return next(ctx, method, req)
		}
	})
}

func transportOnly(wrap func(http.RoundTripper) http.RoundTripper) func() *breakage {
	return func() *breakage { return &breakage{transport: wrap} }
}

var echoesInvalidValue = middlewareOnly(func(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if _, _, ok := toolCall(method, req); ok && err == nil {
			if r, ok := res.(*mcp.CallToolResult); ok && r.IsError {
				appendText(res, "arguments: "+string(req.(*mcp.CallToolRequest).Params.Arguments))
			}
		}
		return res, err
	}
})

func callsProviderBeforeValidating() *breakage {
	return &breakage{middleware: func(env breakEnv) mcp.Middleware {
		return func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if _, _, ok := toolCall(method, req); ok {
					hreq, _ := http.NewRequestWithContext(ctx, http.MethodGet, env.apiURL+"/v2/sandboxes?limit=1", nil)
					hreq.Header.Set("X-API-Key", env.apiKey)
					if resp, err := env.rt.RoundTrip(hreq); err == nil {
						resp.Body.Close()
					}
				}
				return next(ctx, method, req)
			}
		}
	}}
}

// sandboxPath matches /sandboxes/{id} and returns the ID.
func sandboxPath(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, "/sandboxes/")
	if !ok || rest == "" || strings.Contains(rest, "/") {
		return "", false
	}
	return rest, true
}

func sideRequest(orig *http.Request, rt http.RoundTripper, method, path, body string) {
	u := *orig.URL
	u.Path, u.RawQuery = path, ""
	req, _ := http.NewRequestWithContext(orig.Context(), method, u.String(), strings.NewReader(body))
	req.Header = orig.Header.Clone()
	req.Header.Set("Content-Type", "application/json")
	if resp, err := rt.RoundTrip(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

var connectsForExternalGet = transportOnly(func(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if id, ok := sandboxPath(r.URL.Path); ok && r.Method == http.MethodGet {
			sideRequest(r, rt, http.MethodPost, "/sandboxes/"+id+"/connect", `{"timeout":0}`)
		}
		return rt.RoundTrip(r)
	})
})

var createsInGet = middlewareOnly(func(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if name, args, ok := toolCall(method, req); ok && name == "get_sandbox" && args["sandbox_id"] == nil {
			create := &mcp.CallToolRequest{Session: req.(*mcp.CallToolRequest).Session,
				Params: &mcp.CallToolParamsRaw{Name: "create_sandbox", Arguments: json.RawMessage(`{}`)}}
			_, _ = next(ctx, method, create)
		}
		return next(ctx, method, req)
	}
})

var renewsAfterClose = transportOnly(func(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		if id, ok := sandboxPath(r.URL.Path); ok && r.Method == http.MethodDelete && err == nil {
			sideRequest(r, rt, http.MethodPost, "/sandboxes/"+id+"/timeout", `{"timeout":300}`)
		}
		return resp, err
	})
})

func leaksAccessToken() *breakage {
	book := &tokenBook{}
	return &breakage{
		transport: book.capture,
		middleware: func(breakEnv) mcp.Middleware {
			return func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					res, err := next(ctx, method, req)
					if name, _, ok := toolCall(method, req); ok && err == nil && (name == "get_sandbox" || name == "create_sandbox") {
						t := book.latest()
						editToolResult(res, func(m map[string]any) { m["region"] = t })
					}
					return res, err
				}
			}
		},
	}
}

func passesProviderMessage() *breakage {
	var mu sync.Mutex
	var last string
	return &breakage{
		transport: func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				resp, err := rt.RoundTrip(r)
				if err != nil || resp.StatusCode < 400 {
					return resp, err
				}
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var body struct {
					Message string `json:"message"`
				}
				if json.Unmarshal(data, &body) == nil {
					mu.Lock()
					last = body.Message
					mu.Unlock()
				}
				resp.Body = io.NopCloser(bytes.NewReader(data))
				return resp, nil
			})
		},
		middleware: func(breakEnv) mcp.Middleware {
			return func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					res, err := next(ctx, method, req)
					if _, _, ok := toolCall(method, req); ok && err == nil {
						mu.Lock()
						m := last
						mu.Unlock()
						if m != "" {
							appendText(res, "provider said: "+m)
						}
					}
					return res, err
				}
			}
		},
	}
}

func destroysExternalAtClose() *breakage {
	var mu sync.Mutex
	seen := map[string]bool{}
	return &breakage{transport: func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			id, ok := sandboxPath(strings.TrimSuffix(r.URL.Path, "/timeout"))
			if !ok {
				return rt.RoundTrip(r)
			}
			if r.Method != http.MethodDelete {
				mu.Lock()
				seen[id] = true
				mu.Unlock()
				return rt.RoundTrip(r)
			}
			mu.Lock()
			var others []string
			for s := range seen {
				if s != id {
					others = append(others, s)
				}
			}
			mu.Unlock()
			for _, o := range others {
				sideRequest(r, rt, http.MethodDelete, "/sandboxes/"+o, "")
			}
			return rt.RoundTrip(r)
		})
	}}
}

var skipsCleanup = transportOnly(func(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if _, ok := sandboxPath(r.URL.Path); ok && r.Method == http.MethodDelete {
			return pretendNoContent(r), nil
		}
		return rt.RoundTrip(r)
	})
})

var nonzeroExitIsError = middlewareOnly(func(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if name, _, ok := toolCall(method, req); ok && err == nil && name == "run_command" {
			if r, ok := res.(*mcp.CallToolResult); ok && !r.IsError {
				data, _ := json.Marshal(r.StructuredContent)
				var m map[string]any
				_ = json.Unmarshal(data, &m)
				if code, _ := m["exit_code"].(float64); code != 0 {
					e := map[string]any{"error": map[string]any{"category": "internal", "recovery": "Retry."}}
					text, _ := json.Marshal(e)
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}}, nil
				}
			}
		}
		return res, err
	}
})

var readFileDropsLastByte = middlewareOnly(func(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if name, _, ok := toolCall(method, req); ok && err == nil && name == "read_file" {
			editToolResult(res, func(m map[string]any) {
				if c, _ := m["content"].(string); c != "" {
					m["content"] = c[:len(c)-1]
				}
			})
		}
		return res, err
	}
})

var losesBackgroundOutput = middlewareOnly(func(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if name, _, ok := toolCall(method, req); ok && err == nil && name == "get_background_command" {
			editToolResult(res, func(m map[string]any) {
				if s, _ := m["stdout"].(string); s != "" {
					m["stdout"] = s[1:]
				}
			})
		}
		return res, err
	}
})

var corruptsDownload = middlewareOnly(func(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if name, _, ok := toolCall(method, req); ok && err == nil && name == "download_file" {
			editToolResult(res, func(m map[string]any) {
				s, _ := m["data_base64"].(string)
				data, derr := base64.StdEncoding.DecodeString(s)
				if derr == nil && len(data) > 0 {
					data[len(data)/2] ^= 0xff
					m["data_base64"] = base64.StdEncoding.EncodeToString(data)
				}
			})
		}
		return res, err
	}
})

// wrongReadOnlyHint writes readOnlyHint false on get_sandbox (TOOLS-1).
var wrongReadOnlyHint = editsAnnotations("get_sandbox", func(a *mcp.ToolAnnotations) { a.ReadOnlyHint = false })

// runCommandNotDestructive writes destructiveHint false on run_command,
// which the contract's tool table marks destructive (TOOLS-1).
var runCommandNotDestructive = editsAnnotations("run_command", func(a *mcp.ToolAnnotations) {
	no := false
	a.DestructiveHint = &no
})

// editsAnnotations is a variant whose tools/list answer carries tool's
// annotations (a copy) after edit.
func editsAnnotations(tool string, edit func(*mcp.ToolAnnotations)) func() *breakage {
	return middlewareOnly(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if lt, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				for _, t := range lt.Tools {
					if t.Name == tool && t.Annotations != nil {
						a := *t.Annotations
						edit(&a)
						t.Annotations = &a
					}
				}
			}
			return res, err
		}
	})
}

// emptyIDIsDefault reads an explicitly empty sandbox_id as "the default",
// the VAL-3 defect that only shows once a default exists.
var emptyIDIsDefault = middlewareOnly(func(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if _, args, ok := toolCall(method, req); ok && args["sandbox_id"] == "" {
			delete(args, "sandbox_id")
			data, _ := json.Marshal(args)
			ctr := req.(*mcp.CallToolRequest)
			ctr.Params.Arguments = data
		}
		return next(ctx, method, req)
	}
})

// racesImplicitCreate checks for a default and creates one when it finds
// none, without holding anything between the two: calls sent at once each
// create a sandbox (the SESSION-2 race).
var racesImplicitCreate = middlewareOnly(func(next mcp.MethodHandler) mcp.MethodHandler {
	dataPlane := map[string]bool{"run_command": true, "run_code": true, "write_file": true, "list_files": true,
		"read_file": true, "start_background_command": true, "upload_file": true, "download_file": true}
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		name, args, ok := toolCall(method, req)
		if !ok || !dataPlane[name] || args["sandbox_id"] != nil {
			return next(ctx, method, req)
		}
		session := req.(*mcp.CallToolRequest).Session
		call := func(tool string) (*mcp.CallToolResult, error) {
			res, err := next(ctx, method, &mcp.CallToolRequest{Session: session,
				Params: &mcp.CallToolParamsRaw{Name: tool, Arguments: json.RawMessage(`{}`)}})
			r, _ := res.(*mcp.CallToolResult)
			return r, err
		}
		if r, err := call("get_sandbox"); err == nil && r != nil && r.IsError {
			_, _ = call("create_sandbox")
		}
		return next(ctx, method, req)
	}
})

// connectRenewsExternal asks the platform's default lifetime on every
// connect: reaching an external sandbox near its end extends it (RENEW-2).
var connectRenewsExternal = transportOnly(func(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/connect") {
			body := `{"timeout":300}`
			r = r.Clone(r.Context())
			r.Body = io.NopCloser(strings.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		return rt.RoundTrip(r)
	})
})

// renewsOnlyOnSuccess drops the renewal that follows a daemon request the
// daemon answered with an error status (RENEW-1 after a failed call).
func renewsOnlyOnSuccess() *breakage {
	var mu sync.Mutex
	failed := map[string]bool{}
	return &breakage{transport: func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if id, ok := envdSandbox(r); ok {
				resp, err := rt.RoundTrip(r)
				mu.Lock()
				failed[id] = err == nil && resp.StatusCode >= 400
				mu.Unlock()
				return resp, err
			}
			if id, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/sandboxes/"), "/timeout"); ok && r.Method == http.MethodPost {
				mu.Lock()
				skip := failed[id]
				delete(failed, id)
				mu.Unlock()
				if skip {
					return pretendNoContent(r), nil
				}
			}
			return rt.RoundTrip(r)
		})
	}}
}

// envdSandbox returns the sandbox a daemon request is addressed to: the
// E2b-Sandbox-Id header, or the host "49983-<id>.<domain>".
func envdSandbox(r *http.Request) (string, bool) {
	if id := r.Header.Get("E2b-Sandbox-Id"); id != "" {
		return id, true
	}
	host, _, _ := strings.Cut(r.URL.Host, ".")
	return strings.CutPrefix(host, "49983-")
}

// passesTimeOffsets copies the platform's startedAt and endAt strings into
// metadata results as they came, offset and all, instead of converting
// them to UTC (META-2).
func passesTimeOffsets() *breakage {
	var mu sync.Mutex
	raw := map[string][2]string{} // sandbox ID -> platform's startedAt, endAt
	capture := func(body []byte) {
		var one struct {
			SandboxID        string `json:"sandboxID"`
			StartedAt, EndAt string
		}
		var many []json.RawMessage
		items := []json.RawMessage{body}
		if json.Unmarshal(body, &many) == nil {
			items = many
		}
		mu.Lock()
		defer mu.Unlock()
		for _, it := range items {
			if json.Unmarshal(it, &one) == nil && one.SandboxID != "" && one.StartedAt != "" {
				raw[one.SandboxID] = [2]string{one.StartedAt, one.EndAt}
			}
		}
	}
	rewrite := func(m map[string]any) {
		mu.Lock()
		defer mu.Unlock()
		if id, _ := m["sandbox_id"].(string); raw[id][0] != "" {
			m["started_at"], m["end_at"] = raw[id][0], raw[id][1]
		}
	}
	return &breakage{
		transport: func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				resp, err := rt.RoundTrip(r)
				if err != nil || r.Method != http.MethodGet || resp.StatusCode != http.StatusOK {
					return resp, err
				}
				body, rerr := io.ReadAll(resp.Body)
				resp.Body.Close()
				resp.Body = io.NopCloser(bytes.NewReader(body))
				if rerr == nil {
					capture(body)
				}
				return resp, nil
			})
		},
		middleware: func(breakEnv) mcp.Middleware {
			return func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					res, err := next(ctx, method, req)
					name, _, ok := toolCall(method, req)
					if !ok || err != nil {
						return res, err
					}
					editToolResult(res, func(m map[string]any) {
						switch name {
						case "get_sandbox":
							rewrite(m)
						case "list_sandboxes":
							items, _ := m["sandboxes"].([]any)
							for _, it := range items {
								if sm, ok := it.(map[string]any); ok {
									rewrite(sm)
								}
							}
						}
					})
					return res, err
				}
			}
		},
	}
}

// destroysOnce gives up a close-time destroy after its first failure, but
// pretends to itself that the later attempts succeed (SESSION-1).
var destroysOnce = givesUpDestroyAfter(func(resp *http.Response, err error) bool {
	return err != nil || resp.StatusCode >= 400
})

// givesUpDestroyAfter is a server that takes a close-time destroy as done
// once an attempt ends as final says: its later attempts for that sandbox
// never reach the provider (it answers them 204 itself).
func givesUpDestroyAfter(final func(*http.Response, error) bool) func() *breakage {
	return func() *breakage {
		var mu sync.Mutex
		done := map[string]bool{}
		return &breakage{transport: func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				id, ok := sandboxPath(r.URL.Path)
				if !ok || r.Method != http.MethodDelete {
					return rt.RoundTrip(r)
				}
				mu.Lock()
				skip := done[id]
				mu.Unlock()
				if skip {
					return pretendNoContent(r), nil
				}
				resp, err := rt.RoundTrip(r)
				if final(resp, err) {
					mu.Lock()
					done[id] = true
					mu.Unlock()
				}
				return resp, err
			})
		}}
	}
}

// retriesUnauthorized sends a destroy refused with 401 a second time.
var retriesUnauthorized = retriesDestroyRefused(http.StatusUnauthorized)

// retriesDestroyRefused is a server that sends a destroy the provider
// refused with status a second time (SESSION-5: 401 and 403 are final).
func retriesDestroyRefused(status int) func() *breakage {
	return transportOnly(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if _, ok := sandboxPath(r.URL.Path); ok && r.Method == http.MethodDelete && err == nil && resp.StatusCode == status {
				sideRequest(r, rt, http.MethodDelete, r.URL.Path, "")
			}
			return resp, err
		})
	})
}

// poolsByIDConnections sends the by-ID calls through a pool of its own that
// keeps their connections open after they return (GET-6, TIMEOUT-6).
func poolsByIDConnections() *breakage {
	pool := &http.Transport{MaxIdleConnsPerHost: 8}
	return &breakage{transport: func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			_, byID := sandboxPath(r.URL.Path)
			if (byID && r.Method == http.MethodGet) || strings.HasSuffix(r.URL.Path, "/timeout") {
				r = r.Clone(r.Context())
				r.Close = false
				r.Header.Del("Connection")
				return pool.RoundTrip(r)
			}
			return rt.RoundTrip(r)
		})
	}}
}

// errorInStructuredContent is the shape the contract once asked for: every
// tool error also carries its {"error": {...}} object as structuredContent,
// which the TypeScript client validates against the success-only
// outputSchema and turns into a thrown -32602 (TOOLS-5, ERR-2).
var errorInStructuredContent = middlewareOnly(func(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if _, _, ok := toolCall(method, req); ok && err == nil {
			if r, ok := res.(*mcp.CallToolResult); ok && r.IsError && len(r.Content) > 0 {
				if tc, ok := r.Content[0].(*mcp.TextContent); ok && json.Valid([]byte(tc.Text)) {
					r.StructuredContent = json.RawMessage(tc.Text)
				}
			}
		}
		return res, err
	}
})

// ignoresIdleTimeout never closes an idle Streamable HTTP session.
func ignoresIdleTimeout() *breakage {
	return &breakage{http: func(o *server.HTTPOptions) { o.SessionTimeout = -1 }}
}

// shutdownSkipsCleanup exits on shutdown without destroying anything: its
// destroys, once shutdown began, never reach the provider.
func shutdownSkipsCleanup() *breakage {
	var down atomic.Bool
	return &breakage{
		onShutdown: func() { down.Store(true) },
		transport: func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if _, ok := sandboxPath(r.URL.Path); ok && r.Method == http.MethodDelete && down.Load() {
					return pretendNoContent(r), nil
				}
				return rt.RoundTrip(r)
			})
		},
	}
}

// tokenBook remembers the envd access tokens the provider hands the server
// (create and connect answers), so that a transfer-URL variant can sign
// URLs as a server that got its signing wrong would.
type tokenBook struct {
	mu     sync.Mutex
	tokens []string
}

// capture wraps the server's transport to read every envdAccessToken.
func (b *tokenBook) capture(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		if err != nil || r.Method != http.MethodPost || !strings.Contains(r.URL.Path, "sandboxes") {
			return resp, err
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var body struct {
			Token string `json:"envdAccessToken"`
		}
		if json.Unmarshal(data, &body) == nil && body.Token != "" {
			b.mu.Lock()
			b.tokens = append(b.tokens, body.Token)
			b.mu.Unlock()
		}
		resp.Body = io.NopCloser(bytes.NewReader(data))
		return resp, nil
	})
}

// latest returns the token captured last ("" before any).
func (b *tokenBook) latest() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.tokens) == 0 {
		return ""
	}
	return b.tokens[len(b.tokens)-1]
}

// signer finds the token that signed a /files URL's query.
func (b *tokenBook) signer(q url.Values, op string) (string, bool) {
	exp, _ := fakeenvd.SignatureExpiration(q)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.tokens {
		if fakeenvd.SignatureMatches(q, q.Get("path"), op, t, exp) {
			return t, true
		}
	}
	return "", false
}

// editTransferURLs rewrites the url of every url-form result: edit gets the
// query, the operation it is signed for and the signing token.
func editTransferURLs(edit func(q url.Values, op, token string)) func() *breakage {
	return func() *breakage {
		book := &tokenBook{}
		return &breakage{
			transport: book.capture,
			middleware: func(breakEnv) mcp.Middleware {
				return func(next mcp.MethodHandler) mcp.MethodHandler {
					return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
						res, err := next(ctx, method, req)
						name, _, ok := toolCall(method, req)
						if !ok || err != nil || (name != "upload_file" && name != "download_file") {
							return res, err
						}
						op := envdapi.SignRead
						if name == "upload_file" {
							op = envdapi.SignWrite
						}
						editToolResult(res, func(m map[string]any) {
							raw, _ := m["url"].(string)
							u, perr := url.Parse(raw)
							if raw == "" || perr != nil {
								return
							}
							q := u.Query()
							if token, ok := book.signer(q, op); ok {
								edit(q, op, token)
								u.RawQuery = q.Encode()
								m["url"] = u.String()
							}
						})
						return res, err
					}
				}
			},
		}
	}
}

// urlNeverExpires signs its transfer URLs without signature_expiration
// (a capability that never expires), though it still reports an expires_at
// (BIN-3).
var urlNeverExpires = editTransferURLs(func(q url.Values, op, token string) {
	q.Del("signature_expiration")
	q.Set("signature", envdapi.FileSignature(q.Get("path"), op, q.Get("username"), token, nil))
})

// urlCarriesAccessToken passes the envd access token along in the URL, as
// if the signature alone were not enough (BIN-3, META-4).
var urlCarriesAccessToken = editTransferURLs(func(q url.Values, _, token string) {
	q.Set("access_token", token)
})

// urlForOtherPath signs its transfer URLs for a sibling of the path the
// caller asked for, as a server that resolved the path itself would
// (BIN-3): a valid URL, for the wrong file.
var urlForOtherPath = editTransferURLs(func(q url.Values, op, token string) {
	p := q.Get("path") + ".part"
	q.Set("path", p)
	exp, _ := fakeenvd.SignatureExpiration(q)
	q.Set("signature", envdapi.FileSignature(p, op, q.Get("username"), token, exp))
})
