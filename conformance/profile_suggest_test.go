package conformance

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The banner suggests the profile the server's tools fit: one-shot for a
// lone run_code, explicit-ids for tools that require sandbox_id, nothing
// for the contract's design or a profile already declared.
func TestSuggestProfile(t *testing.T) {
	optional := &mcp.Tool{Name: "run_command", InputSchema: map[string]any{"type": "object", "required": []any{"command"}}}
	required := &mcp.Tool{Name: "run_command", InputSchema: map[string]any{"type": "object", "required": []any{"command", "sandbox_id"}}}
	renamed := &mcp.Tool{Name: "exec", InputSchema: map[string]any{"type": "object", "required": []any{"cmd", "sandboxId"}}}
	declared := NewConfig()
	declared.Profile = ProfileExplicitIDs
	mapped := NewConfig()
	mapped.Tools = map[string]ToolAdapter{"run_command": {Name: "exec", Args: map[string]ArgAdapter{"sandbox_id": {Name: "sandboxId"}}}}
	for _, c := range []struct {
		name     string
		cfg      *Config
		tools    map[string]*mcp.Tool
		sessions bool
		want     string
	}{
		{"contract", NewConfig(), map[string]*mcp.Tool{"run_command": optional, "create_sandbox": {Name: "create_sandbox"}}, true, ""},
		{"lone run_code", NewConfig(), map[string]*mcp.Tool{"run_code": {Name: "run_code"}}, true, "--profile one-shot"},
		{"requires sandbox_id", NewConfig(), map[string]*mcp.Tool{"run_command": required}, true, "run_command require sandbox_id: the server keeps no session default; it fits --profile explicit-ids"},
		{"mapped name", mapped, map[string]*mcp.Tool{"run_command": renamed}, true, "exec require sandboxId"},
		{"modern only", NewConfig(), map[string]*mcp.Tool{"run_command": required}, false, ""},
		{"declared", declared, map[string]*mcp.Tool{"run_command": required}, true, ""},
	} {
		got := suggestProfile(c.cfg, c.tools, c.sessions)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
