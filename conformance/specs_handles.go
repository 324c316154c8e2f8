package conformance

import (
	"context"
	"math"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// handleSpecs are the handle rules (HANDLE-1..3): what a sandbox_id or a
// command_id reaches, and how hard one is to guess.
func handleSpecs() []Spec {
	return []Spec{
		specHandlesGoneAreNotFound(),
		specCommandIDEntropy(),
		specHandlesBoundToPrincipal(),
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
