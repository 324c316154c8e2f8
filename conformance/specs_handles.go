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

	"github.com/sandboxkit/sandboxkit/sandbox"
)

// handleSpecs are the handle rules (HANDLE-1..6): what a sandbox_id, a
// command_id or a legacy session's ID reaches, and how hard one is to
// guess.
func handleSpecs() []Spec {
	return []Spec{
		specHandlesGoneAreNotFound(),
		specCommandIDEntropy(),
		specHandlesBoundToPrincipal(),
		specSessionBoundToPrincipal(),
		specTransferURLBoundToPrincipal(),
		specSessionSandboxBoundToPrincipal(),
		specOwnSandboxesOnly(),
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

func specHandlesGoneAreNotFound() Spec {
	return Spec{
		ID: "handles.gone-not-found", Rules: []string{"HANDLE-3"},
		Tools: []string{"create_sandbox", "kill_sandbox", "get_sandbox", "run_command", "start_background_command", "get_background_command"},
		Title: "answers an unknown or killed sandbox_id, and a command_id whose sandbox is gone, with not_found",
		Body: func(ctx context.Context, tc *TestContext) {
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
		},
	}
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

func specCommandIDEntropy() Spec {
	return Spec{
		ID: "handles.command-id-entropy", Rules: []string{"HANDLE-2"}, Tools: []string{"create_sandbox", "start_background_command"},
		Title: "issues command_ids with at least 128 bits of randomness (estimated from several)",
		Body: func(ctx context.Context, tc *TestContext) {
			s := tc.Connect(ctx)
			id := s.mustCreate(ctx, map[string]any{})
			var ids []string
			for i := 0; i < entropySamples; i++ {
				r := tc.ExpectSuccess(s.Call(ctx, "start_background_command", map[string]any{"command": "true", "sandbox_id": id}))
				ids = append(ids, r.String("command_id"))
			}
			bits := estimateBits(ids)
			gomega.Expect(bits).To(gomega.BeNumerically(">=", 128), "command_ids %v carry about %.0f bits of randomness, want at least 128 (HANDLE-2)", ids, bits)
		},
	}
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

func specHandlesBoundToPrincipal() Spec {
	return Spec{
		ID: "handles.bound-to-principal", Rules: []string{"HANDLE-1"},
		Tools: []string{"create_sandbox", "get_sandbox", "run_command", "kill_sandbox", "start_background_command", "get_background_command"},
		Title: "answers another principal's sandbox_id and command_id with not_found, as unknown ones, and lets nothing reach them",
		Body: func(ctx context.Context, tc *TestContext) {
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
		},
	}
}

// hijackMarker is the command another principal's run_command names in a
// session not its own: the fake's journal must never see it start.
const hijackMarker = "echo sandboxkit-hijack"

func specSessionBoundToPrincipal() Spec {
	return Spec{
		ID: "handles.session-bound-to-principal", Rules: []string{"HANDLE-4"}, NeedsFake: true,
		Tools: []string{"create_sandbox", "get_sandbox", "run_command", "kill_sandbox"},
		Title: "refuses another principal's POST, GET and DELETE carrying a legacy session's Mcp-Session-Id, and lets none of them reach the session or its sandboxes",
		Body: func(ctx context.Context, tc *TestContext) {
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
		},
	}
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
