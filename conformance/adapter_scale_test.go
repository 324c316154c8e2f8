package conformance

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// msServerEnv makes the test binary a stdio reference server whose
// set_sandbox_timeout answers its timeout in milliseconds.
const msServerEnv = "SANDBOXKIT_TEST_MS_SERVER"

// scaleChildEnv runs TestAdapterScalesResultsBackChild: "map" with the
// tool map that scales the result back, "none" without.
const scaleChildEnv = "SANDBOXKIT_TEST_SCALE_CHILD"

// serveMillisecondsForTests serves the reference server over stdio, with
// set_sandbox_timeout's timeout multiplied by 1000 (structuredContent and
// the text block, which carries the same JSON).
func serveMillisecondsForTests() int {
	srv, _, err := testServer("sandboxkit-reference-ms")
	if err != nil {
		return 2
	}
	srv.MCPServer().AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			call, ok := req.(*mcp.CallToolRequest)
			out, isTool := res.(*mcp.CallToolResult)
			if err != nil || !ok || !isTool || call.Params.Name != "set_sandbox_timeout" || out.IsError {
				return res, err
			}
			data, _ := json.Marshal(out.StructuredContent)
			var m map[string]any
			if json.Unmarshal(data, &m) == nil {
				if n, ok := m["timeout"].(float64); ok {
					m["timeout"] = n * 1000
					out.StructuredContent = m
					// The text block carries the same JSON (TOOLS-5).
					text, _ := json.Marshal(m)
					out.Content = []mcp.Content{&mcp.TextContent{Text: string(text)}}
				}
			}
			return out, nil
		}
	})
	if err := srv.RunStdio(context.Background()); err != nil {
		return 1
	}
	return 0
}

// A server whose set_sandbox_timeout answers milliseconds passes
// renewal.set-timeout-result with a tool map that scales the result member
// back by 1000, and fails it without one.
func TestAdapterScalesResultsBack(t *testing.T) {
	if os.Getenv(scaleChildEnv) != "" {
		t.Skip("inside a child run")
	}
	if testing.Short() {
		t.Skip("runs the kit twice against a server command")
	}
	run := func(mode string) (string, bool) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAdapterScalesResultsBackChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), scaleChildEnv+"="+mode)
		out, err := cmd.CombinedOutput()
		return string(out), err == nil
	}
	if out, ok := run("map"); !ok || !strings.Contains(out, "1 passed, 0 failed") {
		t.Errorf("with the map that scales the result back, the spec must pass\n%s", tail([]byte(out)))
	}
	out, ok := run("none")
	if ok || !strings.Contains(out, "FAIL renewal.set-timeout-result") || !strings.Contains(out, "120000") {
		t.Errorf("without the map, the milliseconds must fail the spec (passed %v)\n%s", ok, tail([]byte(out)))
	}
}

// TestAdapterScalesResultsBackChild is one run of
// TestAdapterScalesResultsBack.
func TestAdapterScalesResultsBackChild(t *testing.T) {
	mode := os.Getenv(scaleChildEnv)
	if mode == "" {
		t.Skip("run by TestAdapterScalesResultsBack")
	}
	cfg := NewConfig()
	cfg.ServerCommand = []string{os.Args[0]}
	cfg.ServerEnv = []string{msServerEnv + "=1"}
	if mode == "map" {
		m, err := ParseToolMap([]byte(`{"set_sandbox_timeout": {"result": {"fields": {"timeout": {"name": "timeout", "scale": 1000}}}}}`))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Tools = m
	}
	RunWith(t, cfg, &RunOptions{LabelFilter: "renewal.set-timeout-result"})
}
