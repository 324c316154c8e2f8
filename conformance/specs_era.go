package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// protocolEraSpecs are the protocol specs of the two eras (TOOLS-4,
// TOOLS-6): each compares the eras itself, so it runs once.
func protocolEraSpecs() []Spec {
	return []Spec{
		specInitializeOffering2026(),
		specDiscoverVersions(),
		specModernHTTP(),
		specToolsListAcrossEras(),
	}
}

// codeUnsupportedVersion is the JSON-RPC error of a request at a version
// the server does not support (TOOLS-4).
const codeUnsupportedVersion = -32022

func specInitializeOffering2026() Spec {
	return Spec{
		ID: "protocol.initialize-offering-2026", Rules: []string{"TOOLS-4"},
		Title: "answers an initialize that offers 2026-07-28 with a version that has sessions",
		Body: func(ctx context.Context, tc *TestContext) {
			conn := rawConnection(ctx, tc)
			resp, err := rawCall(ctx, conn, 1, "initialize", map[string]any{
				"protocolVersion": ModernProtocolVersion, "capabilities": map[string]any{},
				"clientInfo": map[string]any{"name": "sandboxkit-conformance", "version": Version},
			})
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			gomega.Expect(resp.Error).To(gomega.BeNil(), "initialize offering %s was refused", ModernProtocolVersion)
			var ir struct{ ProtocolVersion string }
			gomega.Expect(json.Unmarshal(resp.Result, &ir)).To(gomega.Succeed())
			// TOOLS-4: initialize negotiates only versions with sessions.
			gomega.Expect(isSessionVersion(ir.ProtocolVersion)).To(gomega.BeTrue(),
				"initialize offering %s answered %q, which is not a version with sessions (%s)", ModernProtocolVersion, ir.ProtocolVersion, strings.Join(sessionVersions, ", "))
		},
	}
}

func specDiscoverVersions() Spec {
	return Spec{
		ID: "protocol.discover-versions", Rules: []string{"TOOLS-4"},
		Title: "lists 2026-07-28 and every version initialize negotiates in server/discover, and answers an unknown version with -32022 and the supported list",
		Body: func(ctx context.Context, tc *TestContext) {
			conn := rawConnection(ctx, tc)
			resp, err := rawCall(ctx, conn, 1, "server/discover", map[string]any{"_meta": modernMeta(ModernProtocolVersion)})
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			// The spec asks the server itself, not the SDK's negotiation: a
			// server whose discover leaves 2026-07-28 out still answers it.
			var werr *jsonrpc.Error
			if errors.As(resp.Error, &werr) && werr.Code == jsonrpc.CodeMethodNotFound && !tc.run.servesModern {
				ginkgo.Skip(NotApplicablePrefix + ": the server does not serve server/discover (" + ModernProtocolVersion + ")")
			}
			gomega.Expect(resp.Error).To(gomega.BeNil(), "server/discover failed")
			var dr struct{ SupportedVersions []string }
			gomega.Expect(json.Unmarshal(resp.Result, &dr)).To(gomega.Succeed())
			// TOOLS-4: discover lists 2026-07-28 and every negotiated version.
			want := []string{ModernProtocolVersion}
			for _, v := range sessionVersions {
				if !tc.run.servesLegacy {
					break // a modern-only server negotiates nothing at initialize
				}
				s, err := tc.ConnectVersion(ctx, v)
				gomega.Expect(err).NotTo(gomega.HaveOccurred(), "connect offering %s", v)
				want = append(want, s.MCP().InitializeResult().ProtocolVersion)
			}
			for _, v := range want {
				gomega.Expect(dr.SupportedVersions).To(gomega.ContainElement(v), "server/discover lists %v, without %s", dr.SupportedVersions, v)
			}
			const unknown = "2099-01-01"
			resp, err = rawCall(ctx, conn, 2, "tools/list", map[string]any{"_meta": modernMeta(unknown)})
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			expectUnsupportedVersion(resp.Error, unknown)
		},
	}
}

// expectUnsupportedVersion checks the error of a request at an unknown
// version: -32022 whose data.supported lists versions (TOOLS-4).
func expectUnsupportedVersion(err error, version string) {
	ginkgo.GinkgoHelper()
	gomega.Expect(err).To(gomega.HaveOccurred(), "a request at version %s succeeded", version)
	werr, ok := err.(*jsonrpc.Error)
	gomega.Expect(ok).To(gomega.BeTrue(), "a request at version %s: %v, not a JSON-RPC error", version, err)
	gomega.Expect(werr.Code).To(gomega.BeEquivalentTo(codeUnsupportedVersion), "a request at version %s: error %d, want %d", version, werr.Code, codeUnsupportedVersion)
	var data struct{ Supported []string }
	gomega.Expect(json.Unmarshal(werr.Data, &data)).To(gomega.Succeed(), "error data %s", werr.Data)
	gomega.Expect(data.Supported).To(gomega.ContainElement(ModernProtocolVersion), "error data %s lists no supported versions", werr.Data)
}

func specModernHTTP() Spec {
	return Spec{
		ID: "protocol.modern-http-sessionless", Rules: []string{"TOOLS-4"},
		Title:    "mints no Mcp-Session-Id for a modern request over Streamable HTTP, and answers modern GET and DELETE with something other than 200",
		Optional: "needs a Streamable HTTP endpoint: a stdio server command has none",
		Body: func(ctx context.Context, tc *TestContext) {
			ep, ok := tc.run.target.(httpEndpoint)
			if !ok || tc.Kind() == TargetStdio {
				ginkgo.Skip(NotApplicablePrefix + ": needs a Streamable HTTP endpoint; a stdio server command has none")
			}
			if !tc.run.servesModern {
				ginkgo.Skip(NotApplicablePrefix + ": the server does not serve " + ModernProtocolVersion)
			}
			url, hc, err := ep.endpoint(ctx)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list",
				"params": map[string]any{"_meta": modernMeta(ModernProtocolVersion)}})
			resp := modernHTTP(ctx, hc, http.MethodPost, url, string(body))
			gomega.Expect(resp.StatusCode).To(gomega.Equal(http.StatusOK), "a modern tools/list POST")
			// TOOLS-4: no session ID is minted for a modern request.
			gomega.Expect(resp.Header.Get("Mcp-Session-Id")).To(gomega.BeEmpty(), "a modern request got an Mcp-Session-Id")
			for _, method := range []string{http.MethodGet, http.MethodDelete} {
				resp := modernHTTP(ctx, hc, method, url, "")
				gomega.Expect(resp.StatusCode).NotTo(gomega.Equal(http.StatusOK), "a modern %s was answered 200: there is no session or stream to reach", method)
			}
		},
	}
}

// modernHTTP sends one request carrying the modern protocol header and
// returns its response, body closed.
func modernHTTP(ctx context.Context, hc *http.Client, method, url, body string) *http.Response {
	ginkgo.GinkgoHelper()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	req.Header.Set("MCP-Protocol-Version", ModernProtocolVersion)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Mcp-Method", "tools/list")
	}
	resp, err := hc.Do(req)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "modern %s", method)
	_ = resp.Body.Close()
	return resp
}

// comparesEras reports whether the spec needs a server that serves both
// eras to the kit: a cloud run, which speaks 2025 sessions only, skips it.
func (spec Spec) comparesEras() bool { return spec.ID == toolsListAcrossErasID }

// toolsListAcrossErasID is TOOLS-6's spec.
const toolsListAcrossErasID = "protocol.tools-list-across-eras"

func specToolsListAcrossEras() Spec {
	return Spec{
		ID: toolsListAcrossErasID, Rules: []string{"TOOLS-6"},
		Title: "gives a byte-identical tools/list to a 2025 session and a 2026-07-28 request",
		Body: func(ctx context.Context, tc *TestContext) {
			if !tc.run.servesModern || !tc.run.servesLegacy {
				ginkgo.Skip(NotApplicablePrefix + ": the server serves one era")
			}
			legacy, err := tc.ConnectVersion(ctx, ProtocolVersion)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			modern, err := tc.ConnectVersion(ctx, ModernProtocolVersion)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			a, _ := json.Marshal(listTools(ctx, legacy))
			b, _ := json.Marshal(listTools(ctx, modern))
			gomega.Expect(string(b)).To(gomega.Equal(string(a)), "tools/list of a %s request differs from a %s session's", ModernProtocolVersion, ProtocolVersion)
		},
	}
}

// rawConnection opens a raw JSON-RPC connection to the server, or skips
// the spec where the target offers none (a URL: the protocol specs over
// HTTP need the SDK's own transport).
func rawConnection(ctx context.Context, tc *TestContext) mcp.Connection {
	ginkgo.GinkgoHelper()
	rt, ok := tc.run.target.(rawTarget)
	if !ok {
		ginkgo.Skip(NotApplicablePrefix + ": needs a raw JSON-RPC connection, which the kit opens in-process or to a server command")
	}
	conn, err := rt.rawConnection(ctx)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "open a raw connection")
	ginkgo.DeferCleanup(func() { _ = conn.Close() })
	return conn
}
