package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
	"github.com/sandboxkit/sandboxkit/server"
)

// handleSpecs are the handle rules (HANDLE-1..6): what a sandbox_id, a
// command_id or a legacy session's ID reaches, and how hard one is to
// guess.
func handleSpecs() []Spec {
	return []Spec{
		{ID: "handles.gone-not-found", Rules: []string{"HANDLE-3"}, Tools: []string{"create_sandbox", "kill_sandbox", "get_sandbox", "run_command", "start_background_command", "get_background_command"}, Body: specHandlesGoneAreNotFound,
			Title: "answers an unknown or killed sandbox_id, and a command_id whose sandbox is gone, with not_found"},
		{ID: "handles.command-id-entropy", Rules: []string{"HANDLE-2"}, Tools: []string{"create_sandbox", "start_background_command"}, Body: specCommandIDEntropy,
			Title: "issues command_ids with at least 128 bits of randomness (estimated from several)"},
		{ID: "handles.bound-to-principal", Rules: []string{"HANDLE-1"}, Tools: []string{"create_sandbox", "get_sandbox", "run_command", "kill_sandbox", "start_background_command", "get_background_command"}, Body: specHandlesBoundToPrincipal,
			Title: "answers another principal's sandbox_id and command_id with not_found, as unknown ones, and lets nothing reach them"},
		{ID: "handles.session-bound-to-principal", Rules: []string{"HANDLE-4"}, Tools: []string{"create_sandbox", "get_sandbox", "run_command", "kill_sandbox"}, NeedsFake: true, Body: specSessionBoundToPrincipal,
			Title: "refuses another principal's POST, GET and DELETE carrying a legacy session's Mcp-Session-Id, and lets none of them reach the session or its sandboxes"},
		{ID: "handles.transfer-url-bound-to-principal", Rules: []string{"HANDLE-5"}, Tools: []string{"create_sandbox", "write_file", "upload_file", "download_file"}, Body: specTransferURLBoundToPrincipal,
			Title: "answers another principal's upload_file and download_file with transfer \"url\" on a sandbox not its own with not_found and no URL, and signs or reaches nothing for it"},
		{ID: "handles.session-sandbox-bound-to-principal", Rules: []string{"HANDLE-1"}, Tools: []string{"create_sandbox", "get_sandbox", "run_command", "kill_sandbox"}, Body: specSessionSandboxBoundToPrincipal,
			Title: "answers another principal's get_sandbox, run_command and kill_sandbox on a sandbox a 2025 session owns with not_found, from a 2025 session or a 2026-07-28 request, and lets nothing reach it"},
		{ID: "handles.own-sandboxes-only", Rules: []string{"HANDLE-6"}, Tools: []string{"create_sandbox", "get_sandbox", "run_command", "set_sandbox_timeout", "kill_sandbox", "list_sandboxes"}, NeedsFake: true, Body: specOwnSandboxesOnly,
			Title:    "on a server confined to own sandboxes, answers an external sandbox_id with not_found as an unknown one, reaches nothing of it and lists it not, and still serves the principal's own",
			Optional: confinedOptional},
	}
}

// unknownSandboxID is a well-formed ID no provider issued.
const unknownSandboxID = "ikitunknown0000000000000"

// expectNotFound fails unless r is a not_found tool error (HANDLE-3):
// never a JSON-RPC error, a transport error or a hang (the call timeout
// bounds it).
func expectNotFound(tc *TestContext, r *Result, what string) {
	ginkgo.GinkgoHelper()
	gomega.Expect(r.Err).NotTo(gomega.HaveOccurred(), "%s: a protocol or transport error instead of a not_found tool error", what)
	gomega.Expect(r.IsError).To(gomega.BeTrue(), "%s succeeded: %s", what, truncate(r.JSON, 300))
	gomega.Expect(r.Category()).To(gomega.Equal("not_found"), "%s: category", what)
}

func specHandlesGoneAreNotFound(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	expectNotFound(tc, s.Call(ctx, "get_sandbox", map[string]any{"sandbox_id": unknownSandboxID}), "get_sandbox of an unknown sandbox")
	id := s.mustCreate(ctx, map[string]any{})
	cmd := tc.ExpectSuccess(s.Call(ctx, "start_background_command", map[string]any{"command": "sleep 100", "sandbox_id": id})).String("command_id")
	// An unknown command_id of the server's own form: a real one with
	// its last character changed (the form is the server's to choose).
	expectNotFound(tc, s.Call(ctx, "get_background_command", map[string]any{"command_id": otherHandle(cmd)}), "get_background_command of an unknown command")
	tc.ExpectSuccess(s.Call(ctx, "kill_sandbox", map[string]any{"sandbox_id": id}))
	expectNotFound(tc, s.Call(ctx, "run_command", map[string]any{"command": "true", "sandbox_id": id}), "run_command on a killed sandbox")
	expectNotFound(tc, s.Call(ctx, "get_sandbox", map[string]any{"sandbox_id": id}), "get_sandbox of a killed sandbox")
	expectNotFound(tc, s.Call(ctx, "get_background_command", map[string]any{"command_id": cmd}), "get_background_command whose sandbox was killed")
}

// otherHandle returns h with its last character changed: a handle of the
// same form that the server did not issue.
func otherHandle(h string) string {
	if h == "" {
		return "unknown"
	}
	last := h[len(h)-1]
	next := byte('0')
	if last == '0' {
		next = '1'
	}
	return h[:len(h)-1] + string(next)
}

// entropySamples is how many command_ids the entropy estimate reads.
const entropySamples = 6

func specCommandIDEntropy(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	id := s.mustCreate(ctx, map[string]any{})
	var ids []string
	for i := 0; i < entropySamples; i++ {
		r := tc.ExpectSuccess(s.Call(ctx, "start_background_command", map[string]any{"command": "true", "sandbox_id": id}))
		ids = append(ids, r.String("command_id"))
	}
	bits := estimateBits(ids)
	gomega.Expect(bits).To(gomega.BeNumerically(">=", 128), "command_ids %v carry about %.0f bits of randomness, want at least 128 (HANDLE-2)", ids, bits)
}

// estimateBits estimates the randomness of one ID from several: the part
// that varies (the common prefix and suffix of every sample removed),
// times the bits per character of the smallest alphabet that holds every
// varying character (decimal, hex, base32, base64url, or anything).
func estimateBits(ids []string) float64 {
	if len(ids) < 2 {
		return 0
	}
	pre, suf := len(ids[0]), len(ids[0])
	for _, id := range ids[1:] {
		pre = min(pre, commonPrefix(ids[0], id))
		suf = min(suf, commonPrefix(reverse(ids[0]), reverse(id)))
	}
	shortest := len(ids[0])
	var varying strings.Builder
	for _, id := range ids {
		shortest = min(shortest, len(id))
		if pre+suf <= len(id) {
			varying.WriteString(id[pre : len(id)-suf])
		}
	}
	if pre+suf >= shortest {
		return 0
	}
	return float64(shortest-pre-suf) * math.Log2(float64(alphabetSize(varying.String())))
}

func alphabetSize(s string) int {
	for _, a := range []struct {
		chars string
		size  int
	}{
		{"0123456789", 10},
		{"0123456789abcdef", 16},
		{"0123456789ABCDEF", 16},
		{"abcdefghijklmnopqrstuvwxyz234567", 32},
		{"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 32},
		{"0123456789abcdefghijklmnopqrstuvwxyz", 36},
		{"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", 64},
	} {
		if strings.Trim(s, a.chars) == "" {
			return a.size
		}
	}
	return 95
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

func specHandlesBoundToPrincipal(ctx context.Context, tc *TestContext) {
	owner, other := tc.principals(ctx)
	id := owner.mustCreate(ctx, map[string]any{})
	cmd := tc.ExpectSuccess(owner.Call(ctx, "start_background_command", map[string]any{"command": "sleep 100", "sandbox_id": id})).String("command_id")
	// HANDLE-1: exactly as an unknown one, and nothing reaches it.
	for tool, args := range map[string]map[string]any{
		"get_sandbox":  {"sandbox_id": id},
		"run_command":  {"command": "true", "sandbox_id": id},
		"kill_sandbox": {"sandbox_id": id},
	} {
		expectNotFound(tc, other.Call(ctx, tool, args), tool+" of another principal's sandbox")
	}
	expectNotFound(tc, other.Call(ctx, "get_background_command", map[string]any{"command_id": cmd}), "get_background_command of another principal's command")
	tc.ExpectSuccess(owner.Call(ctx, "get_sandbox", map[string]any{"sandbox_id": id}))
}

// hijackMarker is the command another principal's run_command names in a
// session not its own: the fake's journal must never see it start.
const hijackMarker = "echo sandboxkit-hijack"

func specSessionBoundToPrincipal(ctx context.Context, tc *TestContext) {
	owner, _ := tc.principals(ctx)
	endpoint, other, _ := tc.run.target.(principalTarget).principalHTTP(1)
	id := owner.mustCreate(ctx, map[string]any{})
	sid := owner.MCP().ID()
	gomega.Expect(sid).NotTo(gomega.BeEmpty(), "the legacy session has no Mcp-Session-Id")
	starts, kills := tc.Fake.Journal().Count(sandbox.OpProcessStart), tc.Fake.Journal().Count(sandbox.OpKillSandbox)
	hijack := hijackAs{tc: tc, endpoint: endpoint, hc: other, session: sid, version: owner.MCP().InitializeResult().ProtocolVersion}
	// HANDLE-4: refused, whatever the request.
	hijack.expectRefused(ctx, "run_command in another principal's session", http.MethodPost, hijack.callBody("run_command", map[string]any{"command": hijackMarker, "sandbox_id": id}))
	hijack.expectRefused(ctx, "kill_sandbox in another principal's session", http.MethodPost, hijack.callBody("kill_sandbox", map[string]any{"sandbox_id": id}))
	hijack.expectRefused(ctx, "GET of another principal's session", http.MethodGet, nil)
	hijack.expectRefused(ctx, "DELETE of another principal's session", http.MethodDelete, nil)
	// HANDLE-4: nothing of the session was reached.
	gomega.Expect(tc.Fake.Journal().Count(sandbox.OpProcessStart)).To(gomega.Equal(starts), "another principal's requests in the session started a process: %v", tc.Fake.Journal().Ops())
	gomega.Expect(tc.Fake.Journal().Count(sandbox.OpKillSandbox)).To(gomega.Equal(kills), "another principal's requests in the session killed a sandbox")
	_, alive := tc.Fake.Sandbox(id)
	gomega.Expect(alive).To(gomega.BeTrue(), "the session's sandbox is gone after another principal's requests")
	tc.ExpectSuccess(owner.Call(ctx, "get_sandbox", map[string]any{"sandbox_id": id}))
	tc.ExpectSuccess(owner.Call(ctx, "run_command", map[string]any{"command": "true", "sandbox_id": id}))
}

// hijackAs sends raw Streamable HTTP requests as another principal, each
// carrying a session ID that is not its own (HANDLE-4).
type hijackAs struct {
	tc       *TestContext
	endpoint string
	hc       *http.Client
	session  string
	version  string
}

// callBody is the body of a tools/call of a contract tool.
func (h hijackAs) callBody(tool string, args map[string]any) []byte {
	ginkgo.GinkgoHelper()
	raw, err := json.Marshal(args)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
		"name": h.tc.Config.toolName(tool), "arguments": json.RawMessage(h.tc.Config.adapter(tool).adaptArgs(raw)),
	}})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return body
}

// expectRefused sends one request of method (with body, if any) in the
// session and fails unless it was refused with 401, 403 or 404 (HANDLE-4)
// within the call timeout.
func (h hijackAs) expectRefused(ctx context.Context, what, method string, body []byte) {
	ginkgo.GinkgoHelper()
	cctx, cancel := context.WithTimeout(ctx, h.tc.Config.CallTimeout)
	defer cancel()
	resp, err := h.send(cctx, method, body)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "%s: no answer", what)
	_ = resp.Body.Close()
	gomega.Expect(resp.StatusCode).To(gomega.BeElementOf(http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound),
		"%s: status %d, want it refused with 401, 403 or 404 (HANDLE-4)", what, resp.StatusCode)
}

func (h hijackAs) send(ctx context.Context, method string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, h.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Mcp-Session-Id", h.session)
	req.Header.Set("MCP-Protocol-Version", h.version)
	resp, err := h.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	return resp, nil
}

// confinedOptional says where the own-sandboxes spec applies: the kit
// declares the option itself, or the user does.
const confinedOptional = "in-process the kit serves a reference server of its own with --own-sandboxes-only; " +
	"another server is held to it only where its user declares it (conform --own-sandboxes-only)"

// specOwnSandboxesOnly checks a server that confines each principal to its
// own sandboxes (HANDLE-6): an external ID is not_found as an unknown one,
// and nothing reaches it; the principal's own sandbox stays reachable.
func specOwnSandboxesOnly(ctx context.Context, tc *TestContext) {
	s := confinedSession(ctx, tc)
	external := tc.Seed(fakeprovider.SandboxSeed{})
	own := s.mustCreate(ctx, map[string]any{})
	unknown := s.Call(ctx, "get_sandbox", map[string]any{"sandbox_id": unknownSandboxID})
	expectNotFound(tc, unknown, "get_sandbox of an unknown sandbox")
	j := tc.Fake.Journal()
	ops := []string{sandbox.OpConnectSandbox, sandbox.OpSetTimeout, sandbox.OpKillSandbox, sandbox.OpProcessStart}
	before := make([]int, len(ops))
	for i, op := range ops {
		before[i] = j.Count(op)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"get_sandbox", map[string]any{"sandbox_id": external}},
		{"run_command", map[string]any{"command": hijackMarker, "sandbox_id": external}},
		{"set_sandbox_timeout", map[string]any{"sandbox_id": external, "timeout": 10}},
		{"kill_sandbox", map[string]any{"sandbox_id": external}},
	} {
		r := s.Call(ctx, c.tool, c.args)
		expectNotFound(tc, r, c.tool+" of an external sandbox on a confined server")
		gomega.Expect(r.ErrorObject()).To(gomega.Equal(unknown.ErrorObject()), "%s of an external sandbox: not answered exactly as an unknown one", c.tool)
	}
	for i, op := range ops {
		gomega.Expect(j.Count(op)).To(gomega.Equal(before[i]), "calls on an external sandbox reached it (%s) on a confined server", op)
	}
	_, alive := tc.Fake.Sandbox(external)
	gomega.Expect(alive).To(gomega.BeTrue(), "the external sandbox is gone after a confined server's refusals")
	listed := tc.ExpectSuccess(s.Call(ctx, "list_sandboxes", map[string]any{})).JSON
	gomega.Expect(listed).NotTo(gomega.ContainSubstring(external), "a confined server lists an external sandbox")
	tc.ExpectSuccess(s.Call(ctx, "run_command", map[string]any{"command": "true", "sandbox_id": own}))
	tc.ExpectSuccess(s.Call(ctx, "kill_sandbox", map[string]any{"sandbox_id": own}))
}

// confinedSession opens a session, in the spec's era, with a server that
// declares HANDLE-6: the kit's own, or the server under test where its
// user declares it; or skips the spec.
func confinedSession(ctx context.Context, tc *TestContext) *Session {
	ginkgo.GinkgoHelper()
	ds := declaredEndpoint(tc, "--own-sandboxes-only", tc.Config.declared().OwnSandboxesOnly, 1,
		func(d *server.Deps) { d.OwnSandboxesOnly = true })
	return declaredSession(ctx, tc, ds, 0, tc.era.version())
}

// specTransferURLBoundToPrincipal checks that a transfer URL is minted only
// for a principal that may reach its sandbox (HANDLE-5). The URL itself
// goes to the sandbox's envd, which knows no principal, so the kit checks
// the minting: another principal's url-form call is not_found, carries no
// URL, and (against the fake) reaches no daemon.
func specTransferURLBoundToPrincipal(ctx context.Context, tc *TestContext) {
	xferApplicable(tc)
	owner, other := tc.principals(ctx)
	id := owner.mustCreate(ctx, map[string]any{})
	file := scratchDir("urlprincipal") + "/f.txt"
	tc.ExpectSuccess(owner.Call(ctx, "write_file", map[string]any{"path": file, "content": "the owner's", "sandbox_id": id}))
	reached := envdReach(tc)
	for _, tool := range []string{"download_file", "upload_file"} {
		r := other.Call(ctx, tool, map[string]any{"path": file, "transfer": "url", "sandbox_id": id})
		expectNotFound(tc, r, tool+" with transfer \"url\" on another principal's sandbox")
		gomega.Expect(r.JSON).NotTo(gomega.ContainSubstring("signature"), "%s: another principal's refused call carries a signed URL", tool)
	}
	gomega.Expect(envdReach(tc)).To(gomega.Equal(reached), "another principal's url-form calls reached the owner's sandbox (connect, stat or transfer)")
	own := owner.Call(ctx, "download_file", map[string]any{"path": file, "transfer": "url", "sandbox_id": id})
	gomega.Expect(tc.ExpectSuccess(own).String("url")).NotTo(gomega.BeEmpty(), "the owner's own download_file url form has no url")
}

// envdReach counts the fake's calls that reach into a sandbox for a
// transfer URL (connect, stat, the /files routes), or -1 without the fake:
// the kit then judges the results alone.
func envdReach(tc *TestContext) int {
	if tc.Fake == nil {
		return -1
	}
	j := tc.Fake.Journal()
	return j.Count(sandbox.OpConnectSandbox) + j.Count(sandbox.OpFilesystemStat) + j.Count(sandbox.OpFilesDownload) + j.Count(sandbox.OpFilesUpload)
}

// specSessionSandboxBoundToPrincipal checks HANDLE-1 for a sandbox that a
// 2025 session owns: another principal, in a 2025 session or a 2026-07-28
// request, gets not_found for it, and nothing reaches it.
func specSessionSandboxBoundToPrincipal(ctx context.Context, tc *TestContext) {
	owner := principalSession(ctx, tc, ProtocolVersion, 0)
	others := map[string]*Session{
		"a 2025 session":       principalSession(ctx, tc, ProtocolVersion, 1),
		"a 2026-07-28 request": principalSession(ctx, tc, ModernProtocolVersion, 1),
	}
	id := owner.mustCreate(ctx, map[string]any{})
	reached := envdReach(tc)
	for what, other := range others {
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"get_sandbox", map[string]any{"sandbox_id": id}},
			{"run_command", map[string]any{"command": hijackMarker, "sandbox_id": id}},
			{"kill_sandbox", map[string]any{"sandbox_id": id}},
		} {
			expectNotFound(tc, other.Call(ctx, c.tool, c.args), c.tool+" in "+what+" of another principal on a 2025 session's sandbox")
		}
	}
	gomega.Expect(envdReach(tc)).To(gomega.Equal(reached), "another principal's calls reached a 2025 session's sandbox")
	if tc.Fake != nil {
		gomega.Expect(tc.kills(id)).To(gomega.BeZero(), "another principal's kill_sandbox reached a 2025 session's sandbox")
	}
	owner.mustRun(ctx, id)
}

// principalSession opens a connection at version as principal 0 or 1, or
// skips the spec where the kit has one principal (tc.principals).
func principalSession(ctx context.Context, tc *TestContext, version string, principal int) *Session {
	ginkgo.GinkgoHelper()
	pt, ok := tc.run.target.(principalTarget)
	if !ok {
		ginkgo.Skip(NotApplicablePrefix + ": the kit has one principal of this server; give a second bearer token (--second-token) to a server that declares principals")
	}
	cctx, cancel := context.WithTimeout(ctx, tc.Config.CallTimeout)
	defer cancel()
	conn, has, err := pt.connectAs(cctx, version, principal)
	if !has {
		ginkgo.Skip(NotApplicablePrefix + ": the kit has one principal of this server; give a second bearer token (--second-token) to a server that declares principals")
	}
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "connect as principal %d", principal+1)
	s := &Session{tc: tc, conn: conn}
	tc.track(s)
	return s
}
