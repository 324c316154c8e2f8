package server

import (
	"strings"
	"testing"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// TestStdioShutdownAnswersCallsInFlight: cancelling a stdio session
// (SIGTERM) while a call is in flight answers the call (its result or an
// error) before the session closes (SESSION-1), and the sandbox the
// session created is destroyed.
func TestStdioShutdownAnswersCallsInFlight(t *testing.T) {
	h := newHarness(t, nil)
	p := startPipeSession(t, h)
	// run_command creates the default sandbox, then hangs starting the
	// process (create itself is not cancellable: it would leak).
	hang := h.fp.InjectFault(fakeprovider.Fault{Op: sandbox.OpProcessStart, Hang: true})
	defer hang.Clear()
	p.write(t, stdioInit+"\n"+stdioInitialized+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_command","arguments":{"command":"echo in flight"}}}`+"\n")
	waitFor(t, "run_command reaches the provider", func() bool { return hang.InFlight() == 1 })
	p.stop(t, "with a call in flight")
	if !strings.Contains(p.out.String(), `"id":2,`) {
		t.Errorf("the call in flight at cancellation was never answered (SESSION-1); output:\n%s", p.out.String())
	}
	waitFor(t, "the session's sandbox destroyed", func() bool { return h.fp.LiveCount() == 0 })
}
