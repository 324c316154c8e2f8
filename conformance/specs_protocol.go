package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/internal/toolset"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

func protocolSpecs() []Spec {
	return []Spec{
		{ID: "protocol.tools-list-shape", Rules: []string{"TOOLS-1"}, Body: specToolsListShape,
			Title: "lists the fifteen tools, each with a description, a closed object input schema, an output schema and truthful annotations"},
		{ID: "protocol.transports-identical", Rules: []string{"TOOLS-2"}, Body: specTransportsIdentical,
			Title:    "gives a byte-identical tools/list and the same result over stdio-style and Streamable HTTP transports",
			Optional: "needs two transports of one server: only the in-process reference target offers them, so it is skipped for a server command or URL"},
		{ID: "protocol.session-versions", Rules: []string{"TOOLS-4"}, Body: specSessionVersions,
			Title: "answers every 2025 version with one that has sessions, and a client offering 2026-07-28 with that version or one with sessions"},
		{ID: "protocol.initialize-offering-2026", Rules: []string{"TOOLS-4"}, Body: specInitializeOffering2026,
			Title: "answers an initialize that offers 2026-07-28 with a version that has sessions"},
		{ID: "protocol.discover-versions", Rules: []string{"TOOLS-4"}, Body: specDiscoverVersions,
			Title: "lists 2026-07-28 and every version initialize negotiates in server/discover, and answers an unknown version with -32022 and the supported list"},
		{ID: "protocol.modern-http-sessionless", Rules: []string{"TOOLS-4"}, Body: specModernHTTP,
			Title:    "mints no Mcp-Session-Id for a modern request over Streamable HTTP, and answers modern GET and DELETE with something other than 200",
			Optional: "needs a Streamable HTTP endpoint: a stdio server command has none"},
		{ID: toolsListAcrossErasID, Rules: []string{"TOOLS-6"}, Body: specToolsListAcrossEras,
			Title: "gives a byte-identical tools/list to a 2025 session and a 2026-07-28 request"},
		{ID: "protocol.wire-not-json", Rules: []string{"WIRE-1", "WIRE-2"}, NeedsFake: true, Body: specWireNotJSON,
			Title:    "refuses a message that is not one JSON value (cut short, or followed by more data) with -32700, runs none of it, and answers the next request",
			Optional: wireOptional},
		{ID: "protocol.wire-not-a-request", Rules: []string{"WIRE-1", "WIRE-3"}, NeedsFake: true, Body: specWireNotARequest,
			Title:    `refuses JSON that is not a request object (a string, a number, null, no "jsonrpc":"2.0", a method that is not a string) with -32600, and answers the next request`,
			Optional: wireOptional},
		{ID: "protocol.wire-batch", Rules: []string{"WIRE-1", "WIRE-4"}, NeedsFake: true, Body: specWireBatch,
			Title:    "refuses a JSON-RPC batch at " + ProtocolVersion + " (batches were removed in 2025-06-18) with -32600 under id null, runs none of its members, and answers the next request",
			Optional: wireOptional},
		{ID: "protocol.wire-ids", Rules: []string{"WIRE-1", "WIRE-5"}, NeedsFake: true, Body: specWireIDs,
			Title:    "refuses a request whose id is null, a boolean, an object, fractional, in exponent form or too large to echo with -32600 under id null (never a rounded id), and answers the next request",
			Optional: wireOptional},
		{ID: "protocol.wire-duplicate-names", Rules: []string{"WIRE-1", "WIRE-6"}, NeedsFake: true, Body: specWireDuplicateNames,
			Title:    "answers a message with a duplicate member name either with -32600/-32700 and nothing run, or with the result of exactly what it ran, and answers the next request",
			Optional: wireOptional},
	}
}

func specToolsListShape(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	tools := listTools(ctx, s)
	names := map[string]*mcp.Tool{}
	for _, t := range tools {
		gomega.Expect(names).NotTo(gomega.HaveKey(t.Name), "tool %s listed twice", t.Name)
		names[t.Name] = t
	}
	gomega.Expect(tools).To(gomega.HaveLen(len(ContractTools())), "the server lists %d tools; the contract has %d and the server must list exactly those", len(tools), len(ContractTools()))
	for _, contract := range ContractTools() {
		t := names[tc.Config.toolName(contract)]
		gomega.Expect(t).NotTo(gomega.BeNil(), "tool %s is missing", contract)
		gomega.Expect(t.Description).NotTo(gomega.BeEmpty(), "%s: empty description", contract)
		in := schemaMap(t.InputSchema)
		gomega.Expect(in["type"]).To(gomega.Equal("object"), "%s: inputSchema type", contract)
		gomega.Expect(in["additionalProperties"]).To(gomega.Equal(false), "%s: inputSchema must set additionalProperties false", contract)
		gomega.Expect(t.OutputSchema).NotTo(gomega.BeNil(), "%s: no outputSchema", contract)
		gomega.Expect(t.Annotations).NotTo(gomega.BeNil(), "%s: no annotations", contract)
		// TOOLS-1: the annotations of the contract's tool table.
		row, _ := toolset.Lookup(contract)
		gomega.Expect(t.Annotations.ReadOnlyHint).To(gomega.Equal(row.ReadOnly), "%s: readOnlyHint", contract)
		if row.Destructive {
			// An absent destructiveHint defaults to true.
			gomega.Expect(t.Annotations.DestructiveHint == nil || *t.Annotations.DestructiveHint).To(gomega.BeTrue(),
				"%s: destructiveHint must be true", contract)
		}
	}
}

func specTransportsIdentical(ctx context.Context, tc *TestContext) {
	alt, ok := tc.run.target.(alternateTarget)
	if !ok {
		ginkgo.Skip("needs both transports of one server: only the in-process reference target offers them")
	}
	a := tc.Connect(ctx)
	conn, err := alt.connectAlternate(ctx, ProtocolVersion)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	b := &Session{tc: tc, conn: conn}
	tc.track(b)
	la, err := a.MCP().ListTools(ctx, nil)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	lb, err := b.MCP().ListTools(ctx, nil)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ja, _ := json.Marshal(la.Tools)
	jb, _ := json.Marshal(lb.Tools)
	gomega.Expect(string(jb)).To(gomega.Equal(string(ja)), "tools/list differs between transports")
	ra := a.Call(ctx, "get_sandbox", map[string]any{})
	rb := b.Call(ctx, "get_sandbox", map[string]any{})
	gomega.Expect(rb.JSON).To(gomega.Equal(ra.JSON), "the same call gives different results")
}

func specSessionVersions(ctx context.Context, tc *TestContext) {
	withSessions := []string{"2025-11-25", "2025-06-18", "2025-03-26"}
	for _, v := range withSessions {
		s, err := tc.ConnectVersion(ctx, v)
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "connect offering %s", v)
		// TOOLS-4 asks for a version with sessions, not an echo: a
		// server may answer an older one it prefers (the MCP
		// lifecycle lets it), and the client decides.
		got := s.MCP().InitializeResult().ProtocolVersion
		gomega.Expect(withSessions).To(gomega.ContainElement(got),
			"offered %s, the server answered %q, which is not a protocol version with sessions (%s)", v, got, strings.Join(withSessions, ", "))
	}
	// TOOLS-4: a server may serve 2026-07-28 beside 2025. A
	// client offering it gets either that sessionless version
	// (the server serves it) or one with sessions, never
	// another; protocol.initialize-offering-2026 checks that an
	// initialize offering it still gets a session.
	s, err := tc.ConnectVersion(ctx, ModernProtocolVersion)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "a client offering %s must be answered", ModernProtocolVersion)
	ir := s.MCP().InitializeResult()
	gomega.Expect(ir).NotTo(gomega.BeNil(), "no result for a client offering %s", ModernProtocolVersion)
	gomega.Expect(ir.ProtocolVersion == ModernProtocolVersion || slices.Contains(withSessions, ir.ProtocolVersion)).To(gomega.BeTrue(),
		"offered %s, the server answered %q, which is neither that version nor one with sessions (%s)",
		ModernProtocolVersion, ir.ProtocolVersion, strings.Join(withSessions, ", "))
}

func listTools(ctx context.Context, s *Session) []*mcp.Tool {
	ginkgo.GinkgoHelper()
	var tools []*mcp.Tool
	for t, err := range s.MCP().Tools(ctx, nil) {
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "tools/list")
		tools = append(tools, t)
	}
	return tools
}

func schemaMap(s any) map[string]any {
	data, _ := json.Marshal(s)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return m
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// codeUnsupportedVersion is the JSON-RPC error of a request at a version
// the server does not support (TOOLS-4).
const codeUnsupportedVersion = -32022

func specInitializeOffering2026(ctx context.Context, tc *TestContext) {
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
}

func specDiscoverVersions(ctx context.Context, tc *TestContext) {
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

func specModernHTTP(ctx context.Context, tc *TestContext) {
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

func specToolsListAcrossEras(ctx context.Context, tc *TestContext) {
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

// JSON-RPC 2.0 §5.1 error codes.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// wireOptional is why the message-strictness specs are out of the
// required lists: the WIRE rules bind a server that declares a strict
// message policy; for any other the kit reports what it saw.
const wireOptional = "WIRE rules bind a server that declares a strict-message policy; for others the kit reports what it saw"

// badFrame is one message the WIRE rules refuse, and how it must be
// answered.
type badFrame struct {
	what  string
	frame string
	// codes are the JSON-RPC errors the refusal may carry.
	codes []int64
	// ids are the ids (JSON text) the refusal may be under.
	ids []string
	// echoOK: a result under exactly the id sent is also right (an id the
	// server can echo exactly).
	echoOK string
}

// wireCreate is a tools/call of create_sandbox under id: a frame whose
// effect the fake's journal shows if the server runs it.
func wireCreate(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"create_sandbox","arguments":{}}}`
}

func specWireNotJSON(ctx context.Context, tc *TestContext) {
	parse := []int64{codeParseError}
	checkBadFrames(ctx, tc, []badFrame{
		{what: "a message cut short", frame: `{"jsonrpc":"2.0","id":"n1","method":"ping"`, codes: parse, ids: []string{"null"}},
		{what: "a message followed by a second one", frame: wireCreate(`"n2"`) + wireCreate(`"n3"`), codes: parse, ids: []string{"null"}},
		{what: "a message followed by a stray word", frame: wireCreate(`"n4"`) + ` x`, codes: parse, ids: []string{"null"}},
	})
}

func specWireNotARequest(ctx context.Context, tc *TestContext) {
	invalid := []int64{codeInvalidRequest}
	checkBadFrames(ctx, tc, []badFrame{
		{what: "a JSON string", frame: `"ping"`, codes: invalid, ids: []string{"null"}},
		{what: "a JSON number", frame: `42`, codes: invalid, ids: []string{"null"}},
		{what: "JSON null", frame: `null`, codes: invalid, ids: []string{"null"}},
		{what: `a request without "jsonrpc"`, frame: `{"id":"v1","method":"tools/call","params":{"name":"create_sandbox","arguments":{}}}`, codes: invalid, ids: []string{`"v1"`, "null"}},
		{what: `"jsonrpc":"1.0"`, frame: `{"jsonrpc":"1.0","id":"v2","method":"tools/call","params":{"name":"create_sandbox","arguments":{}}}`, codes: invalid, ids: []string{`"v2"`, "null"}},
		{what: `"jsonrpc" as the number 2.0`, frame: `{"jsonrpc":2.0,"id":"v3","method":"tools/call","params":{"name":"create_sandbox","arguments":{}}}`, codes: invalid, ids: []string{`"v3"`, "null"}},
		{what: "a method that is a number", frame: `{"jsonrpc":"2.0","id":"v4","method":42}`, codes: invalid, ids: []string{`"v4"`, "null"}},
	})
}

func specWireBatch(ctx context.Context, tc *TestContext) {
	invalid := []int64{codeInvalidRequest}
	checkBadFrames(ctx, tc, []badFrame{
		{what: "a batch of one create_sandbox", frame: `[` + wireCreate(`"b1"`) + `]`, codes: invalid, ids: []string{"null"}},
		{what: "a batch of two", frame: `[` + wireCreate(`"b2"`) + `,{"jsonrpc":"2.0","id":"b3","method":"ping"}]`, codes: invalid, ids: []string{"null"}},
		{what: "an empty batch", frame: `[]`, codes: invalid, ids: []string{"null"}},
	})
}

func specWireIDs(ctx context.Context, tc *TestContext) {
	invalid := []int64{codeInvalidRequest}
	null := []string{"null"}
	huge := "9007199254740993" // 2^53 + 1: a double rounds it to 2^53
	checkBadFrames(ctx, tc, []badFrame{
		{what: "a fractional id", frame: wireCreate(`1.5`), codes: invalid, ids: null},
		{what: "an id in exponent form", frame: wireCreate(`2e0`), codes: invalid, ids: null},
		{what: "an id past 2^53", frame: wireCreate(huge), codes: invalid, ids: null, echoOK: huge},
		{what: "a null id", frame: wireCreate(`null`), codes: invalid, ids: null},
		{what: "a boolean id", frame: wireCreate(`true`), codes: invalid, ids: null},
		{what: "an object id", frame: wireCreate(`{"n":1}`), codes: invalid, ids: null},
	})
}

func specWireDuplicateNames(ctx context.Context, tc *TestContext) {
	either := []int64{codeInvalidRequest, codeParseError}
	checkBadFrames(ctx, tc, []badFrame{
		{what: "a duplicate tool name", frame: `{"jsonrpc":"2.0","id":"d1","method":"tools/call","params":{"name":"list_sandboxes","arguments":{},"name":"create_sandbox"}}`,
			codes: either, ids: []string{`"d1"`, "null"}, echoOK: `"d1"`},
		{what: "a duplicate method", frame: `{"jsonrpc":"2.0","id":"d2","method":"ping","params":{"name":"create_sandbox","arguments":{}},"method":"tools/call"}`,
			codes: either, ids: []string{`"d2"`, "null"}, echoOK: `"d2"`},
		{what: "a duplicate id", frame: `{"jsonrpc":"2.0","id":"d3","method":"tools/call","params":{"name":"create_sandbox","arguments":{}},"id":"d4"}`,
			codes: either, ids: []string{`"d3"`, `"d4"`, "null"}},
	})
}

// checkBadFrames sends each frame, followed by a ping, on every frame
// connection the target offers, and checks the refusal, that the ping is
// still answered (WIRE-1), and that no frame ran unless its answer is the
// result of what ran.
func checkBadFrames(ctx context.Context, tc *TestContext, frames []badFrame) {
	ft, ok := tc.run.target.(frameTarget)
	if !ok {
		ginkgo.Skip(NotApplicablePrefix + ": needs raw messages, which the kit sends in-process, to a server command or to a server URL")
	}
	if tc.Config.declared().StrictMessages {
		sendBadFrames(ctx, tc, ft, frames, func(check func()) { check() })
		return
	}
	// The WIRE rules bind a server that declares a strict-message policy
	// (contract section 14); this one did not (--strict-messages), so the
	// first thing the kit saw go wrong is reported, not failed.
	sendBadFrames(ctx, tc, ft, frames, func(check func()) {
		if seen := gomega.InterceptGomegaFailures(check); len(seen) > 0 {
			ginkgo.Skip(NotApplicablePrefix + ": the server declares no strict-message policy (--strict-messages), and the WIRE rules bind only one that does; the kit saw: " + truncate(seen[0], 300))
		}
	})
}

// sendBadFrames sends each frame on every raw connection of the target
// and checks its answer, the next request's, and the fake's journal; each
// step's checks run inside guard.
func sendBadFrames(ctx context.Context, tc *TestContext, ft frameTarget, frames []badFrame, guard func(check func())) {
	var conns []namedFrameConn
	guard(func() {
		var err error
		conns, err = ft.frameConns(ctx)
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "open the raw connections")
	})
	for _, nc := range conns {
		ginkgo.DeferCleanup(nc.conn.close)
	}
	for _, nc := range conns {
		guard(func() {
			gomega.Expect(initializeFrames(ctx, nc.conn)).To(gomega.Succeed(), "%s: open a session with raw messages", nc.transport)
		})
		for i, f := range frames {
			guard(func() {
				tc.Fake.Journal().Reset()
				ran := exchangeBadFrame(ctx, tc, nc, f, fmt.Sprintf(`"ok-%d"`, i))
				creates := tc.Fake.Journal().Count(sandbox.OpCreateSandbox)
				gomega.Expect(creates).To(gomega.Equal(ran),
					"%s: %s (%s) made %d create_sandbox call(s) at the provider, but its answer says %d ran (WIRE-1: nothing a refused message asks for is done)",
					nc.transport, f.what, truncate(f.frame, 120), creates, ran)
			})
		}
	}
}

// exchangeBadFrame sends f and then a ping under okID, reads until both
// are answered, checks the answer to f, and returns how many sandboxes
// that answer says were created (1 for a create_sandbox result, else 0).
func exchangeBadFrame(ctx context.Context, tc *TestContext, nc namedFrameConn, f badFrame, okID string) int {
	ginkgo.GinkgoHelper()
	rctx, cancel := context.WithTimeout(ctx, tc.allow(ctx, tc.Config.CallTimeout))
	defer cancel()
	where := fmt.Sprintf("%s: %s (%s)", nc.transport, f.what, truncate(f.frame, 120))
	gomega.Expect(nc.conn.send(rctx, []byte(f.frame))).To(gomega.Succeed(), "%s: send", where)
	gomega.Expect(nc.conn.send(rctx, []byte(`{"jsonrpc":"2.0","id":`+okID+`,"method":"ping"}`))).To(gomega.Succeed(),
		"%s: send a ping after it (WIRE-1: the server keeps serving)", where)
	var pinged bool
	var others []wireAnswer
	for !pinged || len(others) == 0 {
		a, err := nc.conn.next(rctx)
		if err != nil {
			if !pinged {
				gomega.Expect(err).NotTo(gomega.HaveOccurred(), "%s: the ping sent after it was never answered (WIRE-1: the server keeps serving)", where)
			} else {
				gomega.Expect(err).NotTo(gomega.HaveOccurred(), "%s: never answered (WIRE-1: a refused message gets a JSON-RPC error)", where)
			}
			return 0 // reached only where failures are intercepted
		}
		if a.idIs(okID) {
			gomega.Expect(a.Error).To(gomega.BeNil(), "%s: the ping after it got an error: %s", where, truncate(a.raw, 300))
			pinged = true
			continue
		}
		others = append(others, a)
	}
	gomega.Expect(others).To(gomega.HaveLen(1), "%s: answered more than once: %v", where, answersText(others))
	return checkRefusal(where, f, others[0])
}

// checkRefusal checks the one answer to a bad frame and returns how many
// sandboxes it says were created.
func checkRefusal(where string, f badFrame, a wireAnswer) int {
	ginkgo.GinkgoHelper()
	if a.Error == nil && f.echoOK != "" && a.idIs(f.echoOK) {
		// Run under exactly the id sent (WIRE-5, WIRE-6 allow it).
		if strings.Contains(string(a.Result), `"sandbox_id"`) && !strings.Contains(string(a.Result), `"sandboxes"`) {
			return 1
		}
		return 0
	}
	if !gomega.Expect(a.Error).NotTo(gomega.BeNil(), "%s: answered with a result, not refused: %s", where, truncate(a.raw, 300)) {
		return 0 // reached only where failures are intercepted
	}
	gomega.Expect(slices.Contains(f.codes, a.Error.Code)).To(gomega.BeTrue(),
		"%s: refused with %d, where the contract says %v: %s", where, a.Error.Code, f.codes, truncate(a.raw, 300))
	gomega.Expect(slices.ContainsFunc(f.ids, a.idIs)).To(gomega.BeTrue(),
		"%s: refused under id %s, where the contract says one of %v (never a rounded or guessed id): %s", where, string(a.ID), f.ids, truncate(a.raw, 300))
	return 0
}

func answersText(as []wireAnswer) string {
	texts := make([]string, len(as))
	for i, a := range as {
		texts[i] = truncate(a.raw, 200)
	}
	b, _ := json.Marshal(texts)
	return string(b)
}
