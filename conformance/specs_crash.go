package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// The crash case: a server process killed with SIGKILL runs no close-time
// destroy. Started again under the same instance ID (the stable name an
// orchestrator gives it, in SANDBOXKIT_INSTANCE), it must destroy what its
// previous life owned within the crash bound, and nothing else. The kit
// can drive this only for a stdio server command, which it starts, kills
// and starts again itself; for other targets the spec is skipped.

// InstanceEnv is the environment variable through which the kit gives a
// server command its instance ID in the crash spec. The reference server
// reads it ("sandboxkit serve", or --instance).
const InstanceEnv = "SANDBOXKIT_INSTANCE"

func crashSpecs() []Spec {
	return []Spec{
		{ID: "cleanup.crash-restart-sweeps", Rules: []string{"SESSION-4", "SESSION-1"}, Tools: []string{"create_sandbox", "run_command", "get_sandbox"}, Process: true, Body: specCrashRestartSweeps,
			Title:    "a server command killed with SIGKILL and started again with the same " + InstanceEnv + " destroys, within the crash bound, every sandbox the dead process owned, and no other: not another instance's, not an external one the dead process used, not an untagged one",
			Optional: "kills and restarts the server process: runs only for a stdio server command (in an in-process run, the reference server's command when the run has it), skipped for a URL"},
		{ID: "cleanup.crash-live-sibling-spared", Rules: []string{"SESSION-4"}, Tools: []string{"create_sandbox", "run_command", "get_sandbox"}, Process: true, Body: specCrashLiveSiblingSpared,
			Title:    "a second server command started with the same " + InstanceEnv + " while the first still serves destroys nothing of the first's: its sandboxes live, untouched, and the first's next calls on them succeed",
			Optional: "starts a second process of the server: runs only for a stdio server command (in an in-process run, the reference server's command when the run has it), skipped for a URL"},
	}
}

// specCrashLiveSiblingSpared starts a second process under a live one's
// instance ID, as an MCP client does that sets the ID for every chat
// window, or probes the server on each connect (SESSION-4: a start sweeps
// only what dead processes left). The sibling has finished starting, start
// sweep included, once it answers a call.
func specCrashLiveSiblingSpared(ctx context.Context, tc *TestContext) {
	st, ok := tc.target.(*stdioTarget)
	if !ok {
		ginkgo.Skip("the live-sibling spec needs a stdio server command (--server-cmd without --server-url; in-process, the reference server's command, which sandboxkit conform gives: RunOptions.ProcessCommand): the kit starts a second process of it")
	}
	instance := crashInstance()
	first, _ := crashConnect(ctx, tc, st, instance)
	first.mustRun(ctx, "")
	implicit := tc.ExpectSuccess(first.Call(ctx, "get_sandbox", map[string]any{})).String("sandbox_id")
	explicit := first.mustCreate(ctx, nil)

	sibling, _ := crashConnect(ctx, tc, st, instance)
	sibling.mustRun(ctx, "")
	// A sweep may go on after the sibling answers: let the provider
	// traffic settle before judging what it spared.
	tc.settle(ctx)
	for _, id := range []string{implicit, explicit} {
		tc.expectUntouched(id, "after a second process started with the first's "+InstanceEnv)
	}
	first.mustRun(ctx, "")
	first.mustRun(ctx, explicit)
}

func specCrashRestartSweeps(ctx context.Context, tc *TestContext) {
	st, ok := tc.target.(*stdioTarget)
	if !ok {
		// Not a failure with RequireAll: the kit cannot kill a server it
		// did not start, nor one that serves every other spec (HTTP).
		ginkgo.Skip("the crash spec needs a stdio server command (--server-cmd without --server-url; in-process, the reference server's command, which sandboxkit conform gives: RunOptions.ProcessCommand): the kit kills it with SIGKILL and starts it again")
	}
	bound := tc.Config.crashBound()
	instance := crashInstance()

	// What the sweep must not touch (SESSION-4: "and nothing else"): a
	// sandbox of another live instance of the same server, an external
	// sandbox the dead process used by ID, and one nobody used.
	other, _ := crashConnect(ctx, tc, st, crashInstance())
	othersOwn := other.mustCreate(ctx, nil)
	untagged := tc.seedExternal()
	external := tc.seedExternal()

	first, cmd := crashConnect(ctx, tc, st, instance)
	// A server may sweep at every start: the first one must spare them too.
	tc.expectSpared(othersOwn, external, untagged, "after the first start")
	first.mustRun(ctx, "")
	implicit := tc.ExpectSuccess(first.Call(ctx, "get_sandbox", map[string]any{})).String("sandbox_id")
	explicit := first.mustCreate(ctx, nil)
	first.mustRun(ctx, external)
	owned := []string{implicit, explicit}

	gomega.Expect(cmd.Process.Kill()).To(gomega.Succeed(), "SIGKILL the server command")
	killed := time.Now()
	_, _ = cmd.Process.Wait()

	second, _ := crashConnect(ctx, tc, st, instance)
	gone := tc.WaitFor(ctx, bound-time.Since(killed), func() bool {
		for _, id := range owned {
			if tc.live(id) {
				return false
			}
		}
		return true
	})
	var left []string
	for _, id := range owned {
		if tc.live(id) {
			left = append(left, id)
		}
	}
	gomega.Expect(gone).To(gomega.BeTrue(), "%v after SIGKILL and a restart with the same %s, the dead process's sandboxes %s still run (crash bound %v)",
		time.Since(killed).Round(time.Millisecond), InstanceEnv, strings.Join(left, ", "), bound)
	ginkgo.AddReportEntry("SIGKILL to last orphan destroyed", time.Since(killed).Round(time.Millisecond).String())
	// A sweep may go on after the last orphan is gone: let the provider
	// traffic settle before judging what it spared.
	tc.settle(ctx)
	tc.expectSpared(othersOwn, external, untagged, "after the restart's sweep")
	// The new life works: it creates, and its sandbox is its own.
	fresh := second.mustCreate(ctx, nil)
	gomega.Expect(tc.live(fresh)).To(gomega.BeTrue())
}

// expectSpared asserts that a start sweep left another instance's
// sandbox, an external one and an untagged one alone (SESSION-4).
func (tc *TestContext) expectSpared(othersOwn, external, untagged, when string) {
	ginkgo.GinkgoHelper()
	tc.expectUntouched(othersOwn, when+", another live instance's sandbox")
	tc.expectUntouched(external, when+", an external sandbox the dead process used")
	tc.expectUntouched(untagged, when+", a sandbox no server created or used")
}

// crashInstance returns the environment setting of a fresh instance ID.
func crashInstance() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return InstanceEnv + "=kit-crash-" + hex.EncodeToString(b)
}

// crashConnect starts the stdio server command with the instance variable
// and opens a tracked session on it; it returns the process to kill.
func crashConnect(ctx context.Context, tc *TestContext, st *stdioTarget, instance string) (*Session, *exec.Cmd) {
	ginkgo.GinkgoHelper()
	cmd := st.command()
	cmd.Env = append(cmd.Env, instance)
	transport := &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}
	cs, err := newClient().Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), fmt.Sprintf("start the server command with %s", instance))
	s := &Session{tc: tc, conn: &clientConn{cs: cs}}
	tc.track(s)
	return s, cmd
}
