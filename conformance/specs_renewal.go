package conformance

import (
	"context"
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// The renewal family checks the session's renewal policy: what
// set_sandbox_timeout returns and changes, how the data-plane tools renew
// owned sandboxes, and that external sandboxes are never renewed.

func renewalSpecs() []Spec {
	return []Spec{
		{
			ID:    "renewal.set-timeout-result",
			Rules: []string{"TIMEOUT-7"},
			Tools: []string{"create_sandbox", "set_sandbox_timeout"},
			Title: `set_sandbox_timeout returns exactly {"success": true, "sandbox_id": id, "timeout": N} for owned, default and external sandboxes`,
			Body:  specSetTimeoutResult,
		},
		{
			ID:    "renewal.initial-policy-default",
			Rules: []string{"RENEW-1"},
			Tools: []string{"create_sandbox", "run_command"},
			Title: "a sandbox created without timeout, explicitly or implicitly, is renewed by 300 s after each command",
			Body:  specInitialPolicyDefault,
		},
		{
			ID:    "renewal.initial-policy-create-timeout",
			Rules: []string{"RENEW-1"},
			Tools: []string{"create_sandbox", "run_command"},
			Title: "a sandbox created with timeout N is renewed by N after each command, counted from the platform's now",
			Body:  specInitialPolicyCreateTimeout,
		},
		{
			ID:    "renewal.policy-follows-set-timeout",
			Rules: []string{"TIMEOUT-3", "RENEW-1"},
			Tools: []string{"create_sandbox", "set_sandbox_timeout", "run_command"},
			Title: "after set_sandbox_timeout N on an owned sandbox, each later command renews it by N",
			Body:  specPolicyFollowsSetTimeout,
		},
		{
			ID:    "renewal.file-and-code-tools-renew",
			Rules: []string{"RENEW-1"},
			Tools: []string{"create_sandbox", "set_sandbox_timeout", "run_code", "write_file", "read_file", "list_files"},
			Title: "run_code, write_file, read_file and list_files each renew the owned sandbox by the policy before they return",
			Body:  specFileAndCodeToolsRenew,
		},
		{
			ID:    "renewal.background-and-binary-tools-renew",
			Rules: []string{"RENEW-1"},
			Tools: []string{"create_sandbox", "set_sandbox_timeout", "start_background_command", "get_background_command",
				"kill_background_command", "upload_file", "download_file"},
			Title: "the background command and binary transfer tools each renew the owned sandbox by the policy before they return",
			Body:  specBackgroundAndBinaryToolsRenew,
		},
		{
			ID:    "renewal.failed-update-keeps-policy",
			Rules: []string{"TIMEOUT-4", "TIMEOUT-3"},
			Tools: []string{"create_sandbox", "set_sandbox_timeout", "run_command"},
			Title: "when the platform rejects set_sandbox_timeout the call is a tool error and later commands renew by the previous policy",
			Body:  specFailedUpdateKeepsPolicy,
		},
		{
			ID:    "renewal.external-timeout-keeps-policy",
			Rules: []string{"TIMEOUT-6", "RENEW-1"},
			Tools: []string{"create_sandbox", "set_sandbox_timeout", "run_command"},
			Title: "set_sandbox_timeout on an external ID changes neither the session's renewal policy nor the external sandbox's renewal",
			Body:  specExternalTimeoutKeepsPolicy,
		},
		{
			ID:    "renewal.external-never-renewed",
			Rules: []string{"RENEW-2"},
			Tools: []string{"run_command"},
			Title: "run_command on an external sandbox reaches it through the platform's connect call and never renews, owns or destroys it",
			Body:  specExternalNeverRenewed,
		},
		{
			ID:    "renewal.close-during-update",
			Rules: []string{"TIMEOUT-5", "SESSION-1"},
			Tools: []string{"create_sandbox", "set_sandbox_timeout"},
			Title: "when the session closes while set_sandbox_timeout is in flight, the server makes no call for that sandbox " +
				"after the close but the close-time destroy",
			Body: specCloseDuringUpdate,
		},
	}
}

// expectRenewedBy runs call with the journal reset and asserts that it
// renewed sandbox id by n seconds (every renewal), before returning, and
// that the platform's end time is now + n.
func (tc *TestContext) expectRenewedBy(id string, n int64, what string, call func()) {
	ginkgo.GinkgoHelper()
	tc.Clock.Advance(7 * time.Second) // so that a renewal is visible in endAt
	tc.Fake.Journal().Reset()
	call()
	got := tc.journal().Renewals(id)
	gomega.Expect(got).NotTo(gomega.BeEmpty(), "%s must renew the owned sandbox by %d s before it returns", what, n)
	gomega.Expect(got).To(gomega.HaveEach(n), "%s must renew the owned sandbox by the policy, %d s", what, n)
	tc.expectEndAt(id, tc.Clock.Now().Add(time.Duration(n)*time.Second), what+": renewed end time")
}

func specSetTimeoutResult(ctx context.Context, tc *TestContext) {
	ext := tc.seedExternal()
	s := tc.Connect(ctx)
	a := s.mustCreate(ctx, nil)
	for _, c := range []struct {
		args map[string]any
		id   string
		n    float64
	}{
		{map[string]any{"sandbox_id": a, "timeout": 120}, a, 120},
		{map[string]any{"timeout": 121}, a, 121},
		{map[string]any{"sandbox_id": ext, "timeout": 122}, ext, 122},
	} {
		r := tc.ExpectSuccess(s.Call(ctx, "set_sandbox_timeout", c.args))
		gomega.Expect(r.Structured).To(gomega.Equal(map[string]any{"success": true, "sandbox_id": c.id, "timeout": c.n}),
			"set_sandbox_timeout %s: the result", argsText(c.args))
	}
}

func specInitialPolicyDefault(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	a := s.mustCreate(ctx, nil)
	tc.expectRenewedBy(a, 300, "run_command on a sandbox created without timeout", func() { s.mustRun(ctx, "") })

	s2 := tc.Connect(ctx)
	tc.Fake.Journal().Reset()
	s2.mustRun(ctx, "")
	var b string
	for _, rec := range tc.Fake.LiveSandboxes() {
		if rec.ID != a {
			b = rec.ID
		}
	}
	gomega.Expect(b).NotTo(gomega.BeEmpty(), "run_command without a default created no sandbox")
	got := tc.journal().Renewals(b)
	gomega.Expect(got).NotTo(gomega.BeEmpty(), "run_command that created the default sandbox must renew it")
	gomega.Expect(got).To(gomega.HaveEach(int64(300)), "run_command that created the default sandbox renews it by 300 s")
	tc.expectRenewedBy(b, 300, "a second run_command on the implicitly created sandbox", func() { s2.mustRun(ctx, "") })
}

func specInitialPolicyCreateTimeout(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	a := s.mustCreate(ctx, map[string]any{"timeout": 120})
	tc.expectRenewedBy(a, 120, "run_command on a sandbox created with timeout 120", func() { s.mustRun(ctx, "") })
	tc.expectRenewedBy(a, 120, "run_command with the sandbox's ID", func() { s.mustRun(ctx, a) })
}

func specPolicyFollowsSetTimeout(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	a := s.mustCreate(ctx, nil)
	tc.ExpectSuccess(s.Call(ctx, "set_sandbox_timeout", map[string]any{"sandbox_id": a, "timeout": 900}))
	tc.expectRenewedBy(a, 900, "run_command after set_sandbox_timeout 900", func() { s.mustRun(ctx, "") })
	tc.expectRenewedBy(a, 900, "a second run_command", func() { s.mustRun(ctx, a) })
	tc.ExpectSuccess(s.Call(ctx, "set_sandbox_timeout", map[string]any{"timeout": 45}))
	tc.expectRenewedBy(a, 45, "run_command after set_sandbox_timeout 45 on the default", func() { s.mustRun(ctx, "") })
}

func specFileAndCodeToolsRenew(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	a := s.mustCreate(ctx, nil)
	tc.ExpectSuccess(s.Call(ctx, "set_sandbox_timeout", map[string]any{"timeout": 700}))
	const path = "/home/user/renewal.txt"
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"run_code", map[string]any{"code": "echo ok", "language": "bash"}},
		{"write_file", map[string]any{"path": path, "content": "renew"}},
		{"read_file", map[string]any{"path": path}},
		{"list_files", map[string]any{"path": "/home/user"}},
		{"read_file", map[string]any{"path": path, "sandbox_id": a}},
	} {
		tc.expectRenewedBy(a, 700, c.tool, func() { tc.ExpectSuccess(s.Call(ctx, c.tool, c.args)) })
	}
}

func specBackgroundAndBinaryToolsRenew(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	a := s.mustCreate(ctx, nil)
	tc.ExpectSuccess(s.Call(ctx, "set_sandbox_timeout", map[string]any{"timeout": 650}))
	const path = "/home/user/renewal.bin"
	var cmdID string
	tc.expectRenewedBy(a, 650, "start_background_command", func() {
		r := tc.ExpectSuccess(s.Call(ctx, "start_background_command", map[string]any{"command": "sleep 30"}))
		cmdID = r.String("command_id")
	})
	gomega.Expect(cmdID).NotTo(gomega.BeEmpty(), "start_background_command returned no command_id")
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"get_background_command", map[string]any{"command_id": cmdID}},
		{"kill_background_command", map[string]any{"command_id": cmdID, "signal": "SIGKILL"}},
		{"upload_file", map[string]any{"path": path, "data_base64": "AAECAw=="}},
		{"download_file", map[string]any{"path": path}},
	} {
		tc.expectRenewedBy(a, 650, c.tool, func() { tc.ExpectSuccess(s.Call(ctx, c.tool, c.args)) })
	}
}

func specFailedUpdateKeepsPolicy(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	a := s.mustCreate(ctx, map[string]any{"timeout": 200})
	fault := tc.Fake.InjectFault(fakeprovider.Fault{Op: sandbox.OpSetTimeout, SandboxID: a, Status: 500})
	tc.ExpectToolError(s.Call(ctx, "set_sandbox_timeout", map[string]any{"sandbox_id": a, "timeout": 900}), "")
	gomega.Expect(fault.Hits()).To(gomega.BeNumerically(">=", 1), "set_sandbox_timeout never reached the platform")
	fault.Clear()
	tc.expectRenewedBy(a, 200, "run_command after a failed set_sandbox_timeout 900", func() { s.mustRun(ctx, "") })

	// The policy still changes on the next successful update.
	tc.ExpectSuccess(s.Call(ctx, "set_sandbox_timeout", map[string]any{"sandbox_id": a, "timeout": 900}))
	tc.expectRenewedBy(a, 900, "run_command after a successful set_sandbox_timeout 900", func() { s.mustRun(ctx, "") })
}

func specExternalTimeoutKeepsPolicy(ctx context.Context, tc *TestContext) {
	ext := tc.seedExternal()
	s := tc.Connect(ctx)
	a := s.mustCreate(ctx, map[string]any{"timeout": 200})
	tc.ExpectSuccess(s.Call(ctx, "set_sandbox_timeout", map[string]any{"sandbox_id": ext, "timeout": 900}))
	tc.expectRenewedBy(a, 200, "run_command on the owned default after set_sandbox_timeout on an external ID", func() { s.mustRun(ctx, "") })
	gomega.Expect(tc.journal().Renewals(ext)).To(gomega.BeEmpty(), "the external sandbox was renewed")

	tc.Fake.Journal().Reset()
	s.mustRun(ctx, ext)
	gomega.Expect(tc.journal().Renewals(ext)).To(gomega.BeEmpty(), "run_command renewed an external sandbox after set_sandbox_timeout on it")
}

func specExternalNeverRenewed(ctx context.Context, tc *TestContext) {
	ext := tc.seedExternal()
	s := tc.Connect(ctx)
	tc.Fake.Journal().Reset()
	s.mustRun(ctx, ext)
	s.mustRun(ctx, ext)

	ops := tc.journalFor(ext).Control().Ops()
	gomega.Expect(ops).To(gomega.ContainElement(gomega.BeElementOf(reachCalls)), "run_command reaches an external sandbox through the platform's connect call (2.x) or GET /sandboxes/{id} (1.x)")
	gomega.Expect(ops).NotTo(gomega.ContainElement(sandbox.OpSetTimeout), "run_command renewed an external sandbox")
	gomega.Expect(ops).NotTo(gomega.ContainElement(sandbox.OpKillSandbox), "run_command killed an external sandbox")
	gomega.Expect(tc.Fake.Journal().Count(sandbox.OpCreateSandbox)).To(gomega.BeZero(), "run_command with an external sandbox_id created a sandbox")

	tc.closeSession(ctx, s)
	tc.expectUntouched(ext, "after the session closed")
	gomega.Expect(tc.journalFor(ext).Renewals(ext)).To(gomega.BeEmpty(), "the external sandbox was renewed")
}

func specCloseDuringUpdate(ctx context.Context, tc *TestContext) {
	// The session's transport closes under the call, as when a client goes
	// away mid-call: Session.Close would first wait for the call to finish.
	s, abort, err := tc.connectAbortable(ctx)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "connect to the server under test")
	id := s.mustCreate(ctx, nil)
	hang := tc.Fake.InjectFault(fakeprovider.Fault{Op: sandbox.OpSetTimeout, SandboxID: id, Hang: true})
	defer hang.Release()

	called := make(chan struct{})
	go func() {
		defer ginkgo.GinkgoRecover()
		defer close(called)
		_ = s.Call(ctx, "set_sandbox_timeout", map[string]any{"sandbox_id": id, "timeout": 900})
	}()
	held := tc.WaitFor(ctx, tc.Config.CallTimeout, func() bool { return hang.Hits() >= 1 })
	gomega.Expect(held).To(gomega.BeTrue(), "set_sandbox_timeout never reached the platform")
	mark := len(tc.journalFor(id))

	aborted := make(chan struct{})
	go func() {
		defer close(aborted)
		_ = abort()
	}()
	// Let the close-time destroy run while the update is still held (a
	// server may also wait for the call), then let the update complete.
	tc.WaitFor(ctx, time.Second, func() bool { return !tc.live(id) })
	hang.Release()
	for what, ch := range map[string]chan struct{}{"closing the session's transport": aborted, "the set_sandbox_timeout call": called} {
		select {
		case <-ch:
		case <-time.After(tc.allow(ctx, tc.Config.SettleTimeout+5*time.Second)):
			ginkgo.Fail(what + " did not end after the session closed")
		}
	}
	_ = s.Close(ctx) // waits for the server to finish the session where the transport shows it
	tc.waitGone(ctx, "the close-time destroy", id)
	tc.settle(ctx)

	after := tc.journalFor(id)[mark:]
	after.ExpectOps(fmt.Sprintf("requests for sandbox %s after the session closed", id), sandbox.OpKillSandbox)
}
