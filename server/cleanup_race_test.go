package server_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// TestRun_ReturnsOnlyAfterCleanupIsUnderWay pins SESSION-1 for stdio: when
// Run returns (and a stdio server exits), the destroy of every owned
// sandbox has already been made, whichever of Run and the session's
// watcher noticed the end first.
func TestRun_ReturnsOnlyAfterCleanupIsUnderWay(t *testing.T) {
	srv, _, fake := newFakeBacked(t)
	// Slow destroys widen the window in which a Run that returned early
	// would leave one behind.
	fake.InjectFault(fakeprovider.Fault{Op: sandbox.OpKillSandbox, Delay: 20 * time.Millisecond})
	ctx := context.Background()
	for i := range 40 {
		c, s := net.Pipe()
		done := make(chan error, 1)
		go func() { done <- srv.Run(ctx, &mcp.IOTransport{Reader: s, Writer: s}) }()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).
			Connect(ctx, &mcp.IOTransport{Reader: c, Writer: c}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_sandbox", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("create: %v %v", err, res)
		}
		_ = cs.Close()
		<-done
		if n := fake.LiveCount(); n != 0 {
			t.Fatalf("round %d: Run returned with %d owned sandboxes not destroyed", i, n)
		}
	}
}
