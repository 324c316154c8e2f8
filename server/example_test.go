package server_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/server"
)

// The reference server serves one 2025 session over an in-memory transport:
// the client's run_command creates the session's default sandbox, and the
// end of the session destroys it. (A 2026-07-28 client, the go-sdk's
// default, has no session: it passes the sandbox_id that create_sandbox
// returned, and the sandbox lives by its lease.)
func ExampleServer_Run() {
	fake := fakeprovider.New(nil)
	defer fake.Close()
	platform, err := fake.Platform()
	if err != nil {
		panic(err)
	}
	srv, err := server.New(&server.Deps{Platform: platform}, nil)
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	serverTransport, clientTransport := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, serverTransport) }()

	client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil)
	cs, err := client.Connect(ctx, clientTransport, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		panic(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{
		Name:      "run_command",
		Arguments: map[string]any{"command": "echo hello"},
	})
	if err != nil {
		panic(err)
	}
	var out struct {
		Stdout   string `json:"stdout"`
		ExitCode int    `json:"exit_code"`
	}
	data, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(data, &out)
	fmt.Printf("isError=%v stdout=%q exit_code=%d\n", res.IsError, out.Stdout, out.ExitCode)
	fmt.Println("running during the session:", fake.LiveCount())

	_ = cs.Close()
	if err := <-done; err != nil {
		panic(err)
	}
	fmt.Println("running after it:", fake.LiveCount())
	// Output:
	// isError=false stdout="hello\n" exit_code=0
	// running during the session: 1
	// running after it: 0
}
