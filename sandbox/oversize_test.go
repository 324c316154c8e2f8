package sandbox_test

import (
	"context"
	"testing"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// An answer past the SDK's bound on one answer is refused with
// response_too_large, unparsed, and its request ends: on a control-plane
// route and on the daemon's unary RPCs alike.
func TestOversizedAnswersAreRefused(t *testing.T) {
	fake, _, p := inProcess(t, nil)
	ctx := context.Background()
	id := fake.AddSandbox(fakeprovider.SandboxSeed{})
	sb, err := p.Connect(ctx, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := sb.Envd(nil)
	calls := []struct {
		op   string
		call func() error
	}{
		{sandbox.OpGetSandbox, func() error { _, err := p.GetInfoByID(ctx, id, nil); return err }},
		{sandbox.OpListSandboxes, func() error { _, err := p.List(ctx, nil); return err }},
		{sandbox.OpFilesystemStat, func() error { _, err := e.Stat(ctx, "/tmp"); return err }},
		{sandbox.OpProcessList, func() error { _, err := e.ListProcesses(ctx); return err }},
	}
	for _, c := range calls {
		t.Run(c.op, func(t *testing.T) {
			h := fake.InjectFault(fakeprovider.Fault{Op: c.op, Oversize: 40 << 20, Times: 1})
			defer h.Clear()
			err := c.call()
			if got := wantErr(t, err, c.op, sandbox.ProviderError); got.Code != sandbox.CodeResponseTooLarge {
				t.Errorf("code %q, want %q", got.Code, sandbox.CodeResponseTooLarge)
			}
			wctx, cancel := context.WithTimeout(ctx, hangGuard)
			defer cancel()
			if err := h.WaitIdle(wctx); err != nil {
				t.Errorf("the oversized answer is still being sent after the call returned: %v", err)
			}
			if err := c.call(); err != nil {
				t.Errorf("the same call without the fault: %v", err)
			}
		})
	}
}
