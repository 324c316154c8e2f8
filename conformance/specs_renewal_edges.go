package conformance

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// The renewal edges: an external sandbox's end time through every tool that
// can reach it (RENEW-2), and renewal after a failed call (RENEW-1).

func renewalEdgeSpecs() []Spec {
	return []Spec{
		{
			ID:    "renewal.external-keeps-end-time",
			Rules: []string{"RENEW-2"},
			Tools: []string{"run_command"},
			Title: "every tool run on an external sandbox near its end leaves its end time exactly as it was, and the connect " +
				"that reaches it asks for no lifetime (timeout 0)",
			Body: specExternalKeepsEndTime,
		},
		{
			ID:    "renewal.failed-calls-renew",
			Rules: []string{"RENEW-1"},
			Tools: []string{"create_sandbox", "set_sandbox_timeout", "read_file"},
			Title: "a call on an owned sandbox that the provider answered with a failure (a missing path, a cwd that does not " +
				"exist) still renews it by the policy before the tool returns",
			Body: specFailedCallsRenew,
		},
		{
			ID:    "renewal.unanswered-call",
			Rules: []string{"RENEW-1", "ERR-1"},
			Tools: []string{"create_sandbox", "set_sandbox_timeout", "read_file"},
			Title: "a call whose daemon request the provider never answers (connection reset) is a categorized tool error; " +
				"it need not renew, and a renewal it makes is by the policy",
			Body: specUnansweredCall,
		},
	}
}

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
