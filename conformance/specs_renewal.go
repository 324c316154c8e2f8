package conformance

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
		{ID: "renewal.set-timeout-result", Rules: []string{"TIMEOUT-7"}, Tools: []string{"create_sandbox", "set_sandbox_timeout"}, Body: specSetTimeoutResult,
			Title: `set_sandbox_timeout returns exactly {"success": true, "sandbox_id": id, "timeout": N} for owned, default and external sandboxes`},
		{ID: "renewal.initial-policy-default", Rules: []string{"RENEW-1"}, Tools: []string{"create_sandbox", "run_command"}, Body: specInitialPolicyDefault,
			Title: "a sandbox created without timeout, explicitly or implicitly, is renewed by 300 s after each command"},
		{ID: "renewal.initial-policy-create-timeout", Rules: []string{"RENEW-1"}, Tools: []string{"create_sandbox", "run_command"}, Body: specInitialPolicyCreateTimeout,
			Title: "a sandbox created with timeout N is renewed by N after each command, counted from the platform's now"},
		{ID: "renewal.policy-follows-set-timeout", Rules: []string{"TIMEOUT-3", "RENEW-1"}, Tools: []string{"create_sandbox", "set_sandbox_timeout", "run_command"}, Body: specPolicyFollowsSetTimeout,
			Title: "after set_sandbox_timeout N on an owned sandbox, each later command renews it by N"},
		{ID: "renewal.file-and-code-tools-renew", Rules: []string{"RENEW-1"}, Tools: []string{"create_sandbox", "set_sandbox_timeout", "run_code", "write_file", "read_file", "list_files"}, Body: specFileAndCodeToolsRenew,
			Title: "run_code, write_file, read_file and list_files each renew the owned sandbox by the policy before they return"},
		{ID: "renewal.background-and-binary-tools-renew", Rules: []string{"RENEW-1"}, Tools: []string{"create_sandbox", "set_sandbox_timeout", "start_background_command", "get_background_command", "kill_background_command", "upload_file", "download_file"}, Body: specBackgroundAndBinaryToolsRenew,
			Title: "the background command and binary transfer tools each renew the owned sandbox by the policy before they return"},
		{ID: "renewal.failed-update-keeps-policy", Rules: []string{"TIMEOUT-4", "TIMEOUT-3"}, Tools: []string{"create_sandbox", "set_sandbox_timeout", "run_command"}, Body: specFailedUpdateKeepsPolicy,
			Title: "when the platform rejects set_sandbox_timeout the call is a tool error and later commands renew by the previous policy"},
		{ID: "renewal.external-timeout-keeps-policy", Rules: []string{"TIMEOUT-6", "RENEW-1"}, Tools: []string{"create_sandbox", "set_sandbox_timeout", "run_command"}, Body: specExternalTimeoutKeepsPolicy,
			Title: "set_sandbox_timeout on an external ID changes neither the session's renewal policy nor the external sandbox's renewal"},
		{ID: "renewal.external-never-renewed", Rules: []string{"RENEW-2"}, Tools: []string{"run_command"}, Body: specExternalNeverRenewed,
			Title: "run_command on an external sandbox reaches it through the platform's connect call and never renews, owns or destroys it"},
		{ID: "renewal.close-during-update", Rules: []string{"TIMEOUT-5", "SESSION-1"}, Tools: []string{"create_sandbox", "set_sandbox_timeout"}, Body: specCloseDuringUpdate,
			Title: "when the session closes while set_sandbox_timeout is in flight, the server makes no call for that sandbox after the close but the close-time destroy"},
		{ID: "renewal.external-keeps-end-time", Rules: []string{"RENEW-2"}, Tools: []string{"run_command"}, Body: specExternalKeepsEndTime,
			Title: "every tool run on an external sandbox near its end leaves its end time exactly as it was, and the connect that reaches it asks for no lifetime (timeout 0)"},
		{ID: "renewal.failed-calls-renew", Rules: []string{"RENEW-1"}, Tools: []string{"create_sandbox", "set_sandbox_timeout", "read_file"}, Body: specFailedCallsRenew,
			Title: "a call on an owned sandbox that the provider answered with a failure (a missing path, a cwd that does not exist) still renews it by the policy before the tool returns"},
		{ID: "renewal.unanswered-call", Rules: []string{"RENEW-1", "ERR-1"}, Tools: []string{"create_sandbox", "set_sandbox_timeout", "read_file"}, Body: specUnansweredCall,
			Title: "a call whose daemon request the provider never answers (connection reset) is a categorized tool error; it need not renew, and a renewal it makes is by the policy"},
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

// An MCP client's ClientSession.Close waits for the calls it has in flight
// before it closes the transport, so a spec cannot close a session "while a
// call hangs" through Session.Close. TestContext.connectAbortable opens a session
// whose transport the spec can close at once, as a client that goes away
// (or crashes) mid-call does: in-process and stdio the server sees its
// input end, over HTTP it receives DELETE.
//
// It repeats the connect code of the three targets; a Session.Abort in the
// kit would replace it.

// lcCaptureTransport records the connection its inner transport opens.
type lcCaptureTransport struct {
	inner mcp.Transport

	mu   sync.Mutex
	conn mcp.Connection
}

func (t *lcCaptureTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err == nil {
		t.mu.Lock()
		t.conn = c
		t.mu.Unlock()
	}
	return c, err
}

// abort closes the transport now, whatever is in flight.
func (t *lcCaptureTransport) abort() error {
	t.mu.Lock()
	c := t.conn
	t.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.Close()
}

// connectAbortable opens a session like tc.Connect and returns it with a
// function that closes its transport immediately.
func (tc *TestContext) connectAbortable(ctx context.Context) (*Session, func() error, error) {
	cctx, cancel := context.WithTimeout(ctx, tc.Config.CallTimeout)
	defer cancel()
	var (
		inner mcp.Transport
		ended func(context.Context) error
	)
	switch t := tc.run.target.(type) {
	case *inProcessTarget:
		clientEnd, serverEnd := net.Pipe()
		serverT := &mcp.IOTransport{Reader: serverEnd, Writer: serverEnd, MaxLineLength: inProcessMaxMessage}
		done := make(chan error, 1)
		go func() { done <- t.srv.Run(t.ctx, serverT) }()
		inner = &mcp.IOTransport{Reader: clientEnd, Writer: clientEnd, MaxLineLength: inProcessMaxMessage}
		ended = func(ctx context.Context) error {
			select {
			case <-done:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	case *stdioTarget:
		inner = &mcp.CommandTransport{Command: t.command(), TerminateDuration: 5 * time.Second}
	case *httpTarget:
		inner = &mcp.StreamableClientTransport{
			Endpoint:             t.cfg.ServerURL,
			HTTPClient:           &http.Client{Transport: headerTransport{headers: t.cfg.Headers, base: http.DefaultTransport}},
			MaxRetries:           -1,
			DisableStandaloneSSE: true,
		}
	default:
		return nil, nil, fmt.Errorf("conformance: no abortable connection for target %T", tc.run.target)
	}
	capture := &lcCaptureTransport{inner: inner}
	cs, err := newClient().Connect(cctx, capture, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		_ = capture.abort()
		return nil, nil, fmt.Errorf("conformance: connect: %w", err)
	}
	s := &Session{tc: tc, conn: &clientConn{cs: cs, ended: ended}}
	tc.track(s)
	return s, capture.abort, nil
}

// The renewal edges: an external sandbox's end time through every tool that
// can reach it (RENEW-2), and renewal after a failed call (RENEW-1).

// externalLeft is how long a seeded external sandbox has left: short enough
// that a connect asking for the platform's default lifetime (300 s) would
// visibly extend it.
const externalLeft = 90 * time.Second

func specExternalKeepsEndTime(ctx context.Context, tc *TestContext) {
	ext := tc.Seed(fakeprovider.SandboxSeed{EndAt: tc.Clock.Now().Add(externalLeft)})
	rec, _ := tc.Fake.Sandbox(ext)
	end := rec.EndAt
	s := tc.Connect(ctx)
	const dir = "/home/user/ext-keep"
	file := dir + "/f.txt"
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"write_file", map[string]any{"path": file, "content": "keep"}},
		{"read_file", map[string]any{"path": file}},
		{"list_files", map[string]any{"path": dir}},
		{"run_command", map[string]any{"command": "echo keep"}},
		{"run_code", map[string]any{"code": "echo keep", "language": "bash"}},
		{"upload_file", map[string]any{"path": dir + "/b.bin", "data_base64": base64.StdEncoding.EncodeToString([]byte("keep"))}},
		{"download_file", map[string]any{"path": dir + "/b.bin"}},
		{"start_background_command", map[string]any{"command": "sleep 30"}},
	}
	ran := 0
	var cmdID string
	for _, c := range calls {
		if tc.Advertised(c.tool) == nil {
			continue
		}
		c.args["sandbox_id"] = ext
		r := externalCall(ctx, tc, s, ext, end, c.tool, c.args)
		ran++
		if c.tool == "start_background_command" {
			cmdID = r.String("command_id")
		}
	}
	if cmdID != "" {
		for _, tool := range []string{"get_background_command", "kill_background_command"} {
			if tc.Advertised(tool) != nil {
				externalCall(ctx, tc, s, ext, end, tool, map[string]any{"command_id": cmdID})
			}
		}
	}
	gomega.Expect(ran).To(gomega.BeNumerically(">", 0))
}

// externalCall runs one successful call on external sandbox ext and checks
// RENEW-2 on it: ext's end time is still end, and every connect to ext asked
// for no lifetime.
func externalCall(ctx context.Context, tc *TestContext, s *Session, ext string, end time.Time, tool string, args map[string]any) *Result {
	ginkgo.GinkgoHelper()
	tc.Clock.Advance(2 * time.Second) // an extension by "now + N" cannot equal end
	mark := tc.Fake.Journal().Len()
	r := tc.ExpectSuccess(s.Call(ctx, tool, args))
	rec, ok := tc.Fake.Sandbox(ext)
	gomega.Expect(ok).To(gomega.BeTrue(), "%s on an external sandbox destroyed it", tool)
	gomega.Expect(rec.EndAt).To(gomega.BeTemporally("==", end),
		"%s on an external sandbox moved its end time from %s to %s: reaching a sandbox the session does not own renewed it (RENEW-2)",
		tool, end.Format(time.RFC3339), rec.EndAt.Format(time.RFC3339))
	for _, e := range tc.journal()[mark:] {
		if fakeprovider.SameSandbox(e.SandboxID, ext) && isConnectOp(e.Op) {
			asked, how := connectLifetime(e)
			gomega.Expect(asked).To(gomega.BeZero(),
				"%s: the connect to an external sandbox %s, a renewal in disguise; send timeout 0 so a running sandbox keeps its end time (RENEW-2)",
				tool, how)
		}
	}
	return r
}

// isConnectOp reports whether op is one of the platform's connect routes.
func isConnectOp(op string) bool {
	return op == sandbox.OpConnectSandbox || strings.HasSuffix(op, "/connect")
}

// connectLifetime returns the lifetime in seconds a connect request asks
// for, and says how in words. A connect without a timeout asks for the
// platform's default of 300 s (e2b@2.51.0 index.d.ts ConnectSandboxV2:
// "timeout ... @default 300").
func connectLifetime(e fakeprovider.Entry) (int64, string) {
	var body struct {
		Timeout *float64 `json:"timeout"`
	}
	if len(e.Body) > 0 {
		if err := json.Unmarshal(e.Body, &body); err != nil {
			return -1, fmt.Sprintf("sent a body that is not JSON (%q)", truncate(string(e.Body), 80))
		}
	}
	if body.Timeout == nil {
		return 300, "asked for no timeout, which the platform reads as its default lifetime of 300 s"
	}
	return int64(*body.Timeout), fmt.Sprintf("asked for a lifetime of %v s", *body.Timeout)
}

func specFailedCallsRenew(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	a := s.mustCreate(ctx, nil)
	const policy = 640
	tc.ExpectSuccess(s.Call(ctx, "set_sandbox_timeout", map[string]any{"sandbox_id": a, "timeout": policy}))
	const missing = "/home/user/no-such-dir-renew/f.txt"
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"read_file", map[string]any{"path": missing}},
		{"list_files", map[string]any{"path": "/home/user/no-such-dir-renew"}},
		{"download_file", map[string]any{"path": missing}},
		{"run_command", map[string]any{"command": "echo x", "cwd": "/home/user/no-such-dir-renew"}},
	} {
		if tc.Advertised(c.tool) == nil {
			continue
		}
		args, _ := json.Marshal(c.args)
		what := fmt.Sprintf("%s %s, which fails,", c.tool, args)
		tc.expectRenewedBy(a, policy, what, func() { tc.ExpectToolError(s.Call(ctx, c.tool, c.args), "") })
	}
}

func specUnansweredCall(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	a := s.mustCreate(ctx, nil)
	const policy = 610
	tc.ExpectSuccess(s.Call(ctx, "set_sandbox_timeout", map[string]any{"sandbox_id": a, "timeout": policy}))
	reset := tc.Fake.InjectFault(fakeprovider.Fault{Op: sandbox.OpFilesDownload, SandboxID: a, Reset: true})
	defer reset.Clear()
	tc.Fake.Journal().Reset()
	r := s.Call(ctx, "read_file", map[string]any{"path": "/home/user/unanswered.txt"})
	if reset.Hits() == 0 {
		// Its answer says nothing about a call the daemon never answered.
		tc.inconclusive(inconclusiveNotExercised, "read_file never reached the daemon, so the reset fault was not exercised")
	}
	gomega.Expect(reset.Hits()).To(gomega.BeNumerically(">", 0), "read_file never reached the daemon, so the fault was not exercised")
	tc.ExpectToolError(r, "")
	for _, n := range tc.journal().Renewals(a) {
		gomega.Expect(n).To(gomega.Equal(int64(policy)), "read_file that got no answer renewed the sandbox by %d s, not by the policy (%d s)", n, policy)
	}
}
