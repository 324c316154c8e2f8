package conformance

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server whose run_command has no cwd is not asked to reject a bad cwd
// (that was a false failure); an unknown cwd is still VAL-4's case.
func TestBoundsApplicable(t *testing.T) {
	tool := &mcp.Tool{Name: "run_command", InputSchema: map[string]any{
		"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}},
	}}
	tc := &TestContext{run: &runState{tools: map[string]*mcp.Tool{"run_command": tool}}}
	base := map[string]any{"command": "true"}
	cases := append(boundsString(base, "cwd"), boundsString(base, "command")...)
	cases = append(cases, boundsUnknown(base, "cwd")...)
	got := boundsApplicable(tc, "run_command", cases)
	var fields []string
	for _, c := range got {
		fields = append(fields, c.name)
	}
	if len(got) != 5 {
		t.Fatalf("kept %v; want the 4 command cases and the unknown cwd", fields)
	}
	for _, c := range got {
		if c.field == "cwd" && c.name != "unknown cwd" {
			t.Errorf("kept %s, a bound of an argument the tool does not have", c.name)
		}
	}
}

// Through a tool map the server's argument names stand for the contract's:
// a read_file that takes filePath and sandboxId is asked about path and
// sandbox_id (they were dropped as "not advertised", so a missing path was
// never tried).
func TestBoundsApplicableThroughToolMap(t *testing.T) {
	tool := &mcp.Tool{Name: "readFile", InputSchema: map[string]any{
		"type": "object", "properties": map[string]any{
			"filePath": map[string]any{"type": "string"}, "sandboxId": map[string]any{"type": "string"},
		},
	}}
	cfg := NewConfig()
	cfg.Tools = map[string]ToolAdapter{"read_file": {Name: "readFile", Args: map[string]ArgAdapter{
		"path": {Name: "filePath"}, "sandbox_id": {Name: "sandboxId"},
	}}}
	tc := &TestContext{Config: cfg, run: &runState{tools: map[string]*mcp.Tool{"read_file": tool}}}
	base := map[string]any{"path": "/tmp/x"}
	cases := append(boundsMissing(base, "path"), boundsSandboxID(base)...)
	cases = append(cases, boundsString(base, "cwd")...)
	got := boundsApplicable(tc, "read_file", cases)
	if want := 1 + len(boundsSandboxID(base)); len(got) != want {
		t.Fatalf("kept %d cases, want %d (path and sandbox_id, not cwd)", len(got), want)
	}
	for _, c := range got {
		if c.field == "cwd" {
			t.Errorf("kept %s, a bound of an argument the tool does not have", c.name)
		}
	}
}
