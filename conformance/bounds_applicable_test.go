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
	base := validArgs{"command": "true"}
	cases := append(base.stringCases("cwd"), base.stringCases("command")...)
	cases = append(cases, base.unknownCases("cwd")...)
	got := tc.applicableCases("run_command", cases)
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
	base := validArgs{"path": "/tmp/x"}
	cases := append(base.missingCases("path"), base.sandboxIDCases()...)
	cases = append(cases, base.stringCases("cwd")...)
	got := tc.applicableCases("read_file", cases)
	if want := 1 + len(base.sandboxIDCases()); len(got) != want {
		t.Fatalf("kept %d cases, want %d (path and sandbox_id, not cwd)", len(got), want)
	}
	for _, c := range got {
		if c.field == "cwd" {
			t.Errorf("kept %s, a bound of an argument the tool does not have", c.name)
		}
	}
}

// A case sends no argument the tool does not define besides its own
// field: a run_code without language is asked about code, not refused
// for the language of the kit's base arguments.
func TestBoundsApplicableDropsUndefinedBaseArguments(t *testing.T) {
	tool := &mcp.Tool{Name: "run_code", InputSchema: map[string]any{
		"type": "object", "properties": map[string]any{"code": map[string]any{"type": "string"}},
	}}
	tc := &TestContext{run: &runState{tools: map[string]*mcp.Tool{"run_code": tool}}}
	base := validArgs{"code": "echo", "language": "bash"}
	cases := append(base.stringCases("code"), base.unknownCases("interpreter")...)
	for _, c := range tc.applicableCases("run_code", cases) {
		if _, has := c.args["language"]; has {
			t.Errorf("%s still sends language: %v", c.name, c.args)
		}
		if _, has := c.args[c.field]; !has && c.field != "" {
			t.Errorf("%s lost its own field %s: %v", c.name, c.field, c.args)
		}
	}
}
