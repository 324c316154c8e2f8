package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/server"
)

// The broken variants of what a principal's handles bind beyond HANDLE-1
// and HANDLE-4: the reference server with one defect each.
func bindBrokenVariants() []brokenVariant {
	return []brokenVariant{
		{"transfer-url-across-principals", FamilyHandles, "signs a transfer URL for the principal that holds the sandbox, whoever asks", transferURLAcrossPrincipals},
		{"principal-cap-per-session", FamilyCleanup, "counts the declared per-principal sandbox cap per session instead of per principal", principalCapPerSession},
		{"session-sandbox-unbound", FamilyHandles, "creates a 2025 session's sandboxes without their principal, so another principal reaches them by ID", sessionSandboxUnbound},
		{sweepsLiveSibling, FamilyCleanup, "sweeps its instance at every start, though another process of it still serves", stdioOnly},
		{"own-sandboxes-only-ignored", FamilyHandles, "declares --own-sandboxes-only but reaches external IDs as without it", ownSandboxesOnlyIgnored},
	}
}

// bindFocusedSpecs are the specs each of these variants must fail (run
// IDs).
var bindFocusedSpecs = map[string][]string{
	"transfer-url-across-principals": {"handles.transfer-url-bound-to-principal@2026-07-28"},
	"own-sandboxes-only-ignored":     {"handles.own-sandboxes-only@2026-07-28"},
	"principal-cap-per-session":      {"cleanup.principal-sandbox-cap"},
	sweepsLiveSibling:                {"cleanup.crash-live-sibling-spared"},
	"session-sandbox-unbound":        {"handles.session-sandbox-bound-to-principal@2026-07-28"},
}

// transferURLAcrossPrincipals answers an upload_file or download_file
// with transfer "url" that the server refused as not_found by trying it
// again as each of the kit's principals: a server whose URL minting skips
// the principal check (HANDLE-5). It passes the principal header the HTTP
// front end sets, as a server would that looked the holder up itself.
func transferURLAcrossPrincipals() *breakage {
	return &breakage{middleware: func(breakEnv) mcp.Middleware {
		return func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				res, err := next(ctx, method, req)
				name, args, ok := toolCall(method, req)
				r, isCall := res.(*mcp.CallToolResult)
				call, isTool := req.(*mcp.CallToolRequest)
				if !ok || err != nil || !isCall || !r.IsError || !isTool || args["transfer"] != "url" ||
					(name != "upload_file" && name != "download_file") || call.Extra == nil || call.Extra.Header == nil {
					return res, err
				}
				for _, p := range kitPrincipals {
					extra := *call.Extra
					extra.Header = call.Extra.Header.Clone()
					extra.Header.Set("Sandboxkit-Principal", p)
					again := *call
					again.Extra = &extra
					if res2, err2 := next(ctx, method, &again); err2 == nil {
						if r2, ok := res2.(*mcp.CallToolResult); ok && !r2.IsError {
							return res2, nil
						}
					}
				}
				return res, err
			}
		}
	}}
}

// ownSandboxesOnlyIgnored is a server that declares the option but does
// not hold to it (HANDLE-6): its confined server reaches external IDs.
func ownSandboxesOnlyIgnored() *breakage {
	return &breakage{deps: func(d *server.Deps) { d.OwnSandboxesOnly = false }}
}

// principalCapPerSession is a server that holds its declared cap of live
// sandboxes per principal (QUOTA-4) to each session alone: a principal
// with several sessions and requests passes it.
func principalCapPerSession() *breakage {
	return &breakage{deps: func(d *server.Deps) {
		d.Limits.SandboxesPerSession, d.Limits.SandboxesPerPrincipal = d.Limits.SandboxesPerPrincipal, 0
	}}
}

// sessionSandboxUnbound drops the session's principal from the metadata
// of every create, as the reference server did before it bound a 2025
// session's sandboxes (HANDLE-1): they read as external.
func sessionSandboxUnbound() *breakage {
	return &breakage{transport: func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/sandboxes") || r.Body == nil {
				return rt.RoundTrip(r)
			}
			data, err := io.ReadAll(r.Body)
			_ = r.Body.Close()
			if err != nil {
				return nil, err
			}
			var body map[string]any
			if json.Unmarshal(data, &body) == nil {
				if md, ok := body["metadata"].(map[string]any); ok {
					delete(md, server.SessionPrincipalTagKey)
					data, _ = json.Marshal(body)
				}
			}
			r = r.Clone(r.Context())
			r.Body = io.NopCloser(bytes.NewReader(data))
			r.ContentLength = int64(len(data))
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
			return rt.RoundTrip(r)
		})
	}}
}
