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
