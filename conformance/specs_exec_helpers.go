package conformance

// Helpers shared by the data-plane families (exec, files, background,
// binary): methods on the *Session (data-plane calls), the *TestContext
// (renewal and implicit-create checks) and the fake's journal.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

// dpDefaultRenewal is the renewal policy of a sandbox created without a
// timeout (RENEW-1).
const dpDefaultRenewal = 300

// execResult is the result of run_command and run_code (EXEC-1, EXEC-2).
type execResult struct {
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	ExitCode  int    `json:"exit_code"`
	Truncated bool   `json:"truncated"`
}

// decode asserts a successful result (TOOLS-3), checks that its
// structuredContent holds every key of the contract's result, and decodes it
// into out.
func (tc *TestContext) decode(r *Result, out any, keys ...string) {
	ginkgo.GinkgoHelper()
	tc.ExpectSuccess(r)
	for _, k := range keys {
		gomega.Expect(r.Structured).To(gomega.HaveKey(k), "%s: the result lacks %q", r.Tool, k)
	}
	data, err := json.Marshal(r.Structured)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	gomega.Expect(json.Unmarshal(data, out)).To(gomega.Succeed(), "%s: result members have the wrong types: %s", r.Tool, truncate(r.Text, 300))
}

// exec calls run_command or run_code and returns its decoded result.
func (s *Session) exec(ctx context.Context, tool string, args map[string]any) execResult {
	ginkgo.GinkgoHelper()
	tc := s.tc
	var out execResult
	tc.decode(s.Call(ctx, tool, args), &out, "stdout", "stderr", "exit_code", "truncated")
	return out
}

// runCommand runs a shell command that must succeed with exit code 0.
func (s *Session) runCommand(ctx context.Context, command string, sandboxID ...string) execResult {
	ginkgo.GinkgoHelper()
	args := map[string]any{"command": command}
	if len(sandboxID) > 0 && sandboxID[0] != "" {
		args["sandbox_id"] = sandboxID[0]
	}
	out := s.exec(ctx, "run_command", args)
	gomega.Expect(out.ExitCode).To(gomega.Equal(0), "run_command %q: exit code (stderr %q)", command, truncate(out.Stderr, 300))
	return out
}

// scratchDir returns a fresh absolute directory path under /tmp (which
// every E2B template and the fake have) for one spec's files.
func scratchDir(tag string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "/tmp/sbk-" + tag + "-" + hex.EncodeToString(b)
}

// createWithTimeout creates a sandbox with create_sandbox and returns its ID; a
// timeout of 0 leaves the argument out.
func (s *Session) createWithTimeout(ctx context.Context, timeout int) string {
	ginkgo.GinkgoHelper()
	args := map[string]any{}
	if timeout > 0 {
		args["timeout"] = timeout
	}
	return s.mustCreate(ctx, args)
}

// liveCreated returns the IDs of the live sandboxes the server created
// (the ones the spec did not seed).
func (tc *TestContext) liveCreated() []string {
	var ids []string
	for _, rec := range tc.Fake.LiveSandboxes() {
		if rec.Metadata[seedMarker] != "1" {
			ids = append(ids, rec.ID)
		}
	}
	return ids
}

// dpRenewalCase is one data-plane call whose renewal a spec checks.
type dpRenewalCase struct {
	// Tool is the contract tool called.
	Tool string
	// Args builds the call's arguments for the sandbox (sandbox_id already
	// set when the case needs it).
	Args func(sandboxID string) map[string]any
	// WantEnvd is true when the call must reach the sandbox's daemon (so the
	// renewal must follow that request).
	WantEnvd bool
}

// expectRenewals checks RENEW-1 for each case, in order, on an owned
// sandbox created with create_sandbox {timeout: policy}: the call succeeds,
// the journal holds a set-timeout request for the sandbox with {"timeout":
// policy} after the call's last daemon request, already when the call has
// returned, and the sandbox's end is now + policy on the fake's clock.
func (tc *TestContext) expectRenewals(ctx context.Context, policy int, cases []dpRenewalCase) {
	ginkgo.GinkgoHelper()
	s := tc.Connect(ctx)
	id := s.createWithTimeout(ctx, policy)
	for _, c := range cases {
		// Move the clock so that a renewal is visible in endAt.
		tc.Clock.Advance(7 * time.Second)
		mark := tc.Fake.Journal().Len()
		r := s.Call(ctx, c.Tool, c.Args(id))
		tc.ExpectSuccess(r)
		tc.expectRenewedSince(c.Tool, id, mark, policy, c.WantEnvd)
	}
}

// expectRenewedSince checks that since journal index mark the sandbox was
// renewed to policy seconds (after the last daemon request when wantEnvd),
// and that its end is now + policy.
func (tc *TestContext) expectRenewedSince(tool, id string, mark, policy int, wantEnvd bool) {
	ginkgo.GinkgoHelper()
	entries := tc.journal()[mark:]
	lastEnvd, renewal := -1, -1
	for i, e := range entries {
		if !fakeprovider.SameSandbox(e.SandboxID, id) {
			continue
		}
		if e.Envd {
			lastEnvd = i
		}
		if e.Op == sandbox.OpSetTimeout && i > lastEnvd {
			renewal = i
		}
	}
	if wantEnvd {
		gomega.Expect(lastEnvd).To(gomega.BeNumerically(">=", 0), "%s: the call never reached the sandbox's daemon", tool)
	}
	gomega.Expect(renewal).To(gomega.BeNumerically(">=", 0),
		"%s: no set-timeout request for the owned sandbox after the call's work, before the call returned (RENEW-1); journal: %s",
		tool, entries.Summary())
	e := entries[renewal]
	var body struct {
		Timeout *int `json:"timeout"`
	}
	gomega.Expect(json.Unmarshal(e.Body, &body)).To(gomega.Succeed(), "%s: set-timeout body is not JSON", tool)
	gomega.Expect(body.Timeout).NotTo(gomega.BeNil(), "%s: set-timeout body has no timeout", tool)
	gomega.Expect(*body.Timeout).To(gomega.Equal(policy), "%s: renewed to the wrong timeout (the session's renewal policy is %d s)", tool, policy)
	gomega.Expect(e.Status).To(gomega.BeNumerically("<", 300), "%s: the renewal failed with status %d", tool, e.Status)
	rec, ok := tc.Fake.Sandbox(id)
	gomega.Expect(ok).To(gomega.BeTrue(), "%s: the owned sandbox is gone", tool)
	gomega.Expect(rec.EndAt).To(gomega.BeTemporally("==", tc.Clock.Now().Add(time.Duration(policy)*time.Second)),
		"%s: the sandbox's end is not now + the renewal policy", tool)
}

// expectExternalUntouchedSince checks RENEW-2 on the journal since mark for an
// external sandbox: it was reached through connect (once at least, when
// wantConnect), and never renewed, killed or created.
func (tc *TestContext) expectExternalUntouchedSince(tool, id string, mark int, wantConnect bool) {
	ginkgo.GinkgoHelper()
	entries := tc.journal()[mark:]
	connects := 0
	for _, e := range entries {
		switch e.Op {
		case sandbox.OpConnectSandbox, sandbox.OpGetSandbox:
			if fakeprovider.SameSandbox(e.SandboxID, id) { // GET: the 1.x connect (reachCalls)
				connects++
			}
		case sandbox.OpSetTimeout, sandbox.OpKillSandbox:
			gomega.Expect(fakeprovider.SameSandbox(e.SandboxID, id)).To(gomega.BeFalse(), "%s: the server called %s on an external sandbox (RENEW-2)", tool, e.Op)
		case sandbox.OpCreateSandbox:
			ginkgo.Fail(fmt.Sprintf("%s: the server created a sandbox for a call naming an external sandbox", tool))
		}
	}
	if wantConnect {
		gomega.Expect(connects).To(gomega.BeNumerically(">=", 1), "%s: the external sandbox was not reached through the platform's connect call (or the 1.x GET /sandboxes/{id}) (RENEW-2); journal: %s",
			tool, entries.Summary())
	}
}

// Summary lists journal entries briefly for failure messages.
func (entries journal) Summary() string {
	var parts []string
	for _, e := range entries {
		op := e.Op
		if op == "" {
			op = e.Method + " " + e.Path
		}
		parts = append(parts, fmt.Sprintf("%s[%s]=%d", op, e.SandboxID, e.Status))
	}
	return truncate(strings.Join(parts, ", "), 2000)
}

// dpImplicitCase is one data-plane call made in a session without a
// default sandbox.
type dpImplicitCase struct {
	Tool string
	Args map[string]any
}

// expectImplicitCreate checks SESSION-2 for a tool: in a fresh session
// the call creates exactly one sandbox, a second call reuses it, it is the
// session's default (get_sandbox without sandbox_id names it), and it is
// owned (destroyed when the session closes). It returns nothing: every
// check is an assertion.
func (tc *TestContext) expectImplicitCreate(ctx context.Context, first, second dpImplicitCase) {
	ginkgo.GinkgoHelper()
	s := tc.Connect(ctx)
	gomega.Expect(tc.liveCreated()).To(gomega.BeEmpty())
	r := s.Call(ctx, first.Tool, first.Args)
	tc.ExpectSuccess(r)
	gomega.Expect(tc.Fake.Journal().Count(sandbox.OpCreateSandbox)).To(gomega.Equal(1),
		"%s without sandbox_id and without a default must create exactly one sandbox (SESSION-2)", first.Tool)
	created := tc.liveCreated()
	gomega.Expect(created).To(gomega.HaveLen(1), "%s: one live sandbox after the implicit create", first.Tool)
	for _, e := range tc.Fake.Journal().Calls(sandbox.OpCreateSandbox) {
		var body struct {
			TemplateID string `json:"templateID"`
		}
		_ = json.Unmarshal(e.Body, &body)
		gomega.Expect(body.TemplateID).To(gomega.Or(gomega.BeEmpty(), gomega.Equal(sandbox.DefaultTemplate)),
			"%s: the implicit create must use the default template", first.Tool)
	}
	if id := r.String("sandbox_id"); id != "" {
		gomega.Expect(id).To(gomega.Equal(created[0]), "%s: the sandbox_id in the result is not the created sandbox", first.Tool)
	}
	tc.ExpectSuccess(s.Call(ctx, second.Tool, second.Args))
	gomega.Expect(tc.Fake.Journal().Count(sandbox.OpCreateSandbox)).To(gomega.Equal(1),
		"%s after %s: the second call must use the implicitly created default, not create another", second.Tool, first.Tool)
	g := tc.ExpectSuccess(s.Call(ctx, "get_sandbox", map[string]any{}))
	gomega.Expect(g.String("sandbox_id")).To(gomega.Equal(created[0]), "the implicitly created sandbox must become the default")
	gomega.Expect(s.Close(ctx)).To(gomega.Succeed())
	gone := tc.WaitFor(ctx, tc.Config.SettleTimeout, func() bool {
		_, ok := tc.Fake.Sandbox(created[0])
		return !ok
	})
	gomega.Expect(gone).To(gomega.BeTrue(), "the implicitly created sandbox is owned: closing the session must destroy it")
}

// reachCalls are the control-plane calls an SDK makes to reach an existing
// sandbox: connect (2.x: POST /sandboxes/{id}/connect) and GET
// /sandboxes/{id}, which is how e2b 1.x connects (JS e2b@1.13.2
// dist/index.mjs Sandbox.connect calls getInfo, GET /sandboxes/{sandboxID},
// and takes envdAccessToken from it; Python 1.x Sandbox.connect calls
// SandboxApi._cls_get_info the same way).
var reachCalls = []string{sandbox.OpConnectSandbox, sandbox.OpGetSandbox}

// The specs every data-plane family has, one constructor each: their rules
// and titles are the same but for the tools they name.

// implicitCreateSpec is a family's SESSION-2 spec: tool, called without
// sandbox_id and without a default, creates one sandbox that becomes the
// owned default. tools are every tool the spec calls.
func implicitCreateSpec(id, tool string, tools []string, body func(context.Context, *TestContext)) Spec {
	return Spec{
		ID: id, Rules: []string{"SESSION-2"}, NeedsFake: true, Tools: tools, Body: body,
		Title: tool + " without sandbox_id and without a default creates one sandbox that becomes the owned default",
	}
}

// renewsOwnedSpec is a family's RENEW-1 spec: each of tools, on an owned
// sandbox (made with create_sandbox), renews it to the session's renewal
// policy before returning.
func renewsOwnedSpec(id string, tools []string, body func(context.Context, *TestContext)) Spec {
	return Spec{
		ID: id, Rules: []string{"RENEW-1"}, NeedsFake: true, Tools: append([]string{"create_sandbox"}, tools...), Body: body,
		Title: andList(tools) + " on an owned sandbox renew it to the session's renewal policy before returning",
	}
}

// externalNoRenewSpec is a family's RENEW-2 spec: tools on an external
// sandbox reach it through connect and never renew it.
func externalNoRenewSpec(id string, tools []string, body func(context.Context, *TestContext)) Spec {
	return Spec{
		ID: id, Rules: []string{"RENEW-2"}, NeedsFake: true, Tools: tools, Body: body,
		Title: andList(tools) + " on an external sandbox reach it through connect and never renew it",
	}
}

// andList joins words as a list in prose: "a", "a and b", "a, b and c".
func andList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}
