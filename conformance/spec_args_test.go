package conformance

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FILE-2's pointer to download_file may use the server's name for it: a
// server whose tool map renames download_file to downloadFile and whose
// error says "use downloadFile" points to it (that was a false failure).
func TestFilesPointerUsesServerToolName(t *testing.T) {
	cfg := NewConfig()
	cfg.Tools = map[string]ToolAdapter{"download_file": {Name: "downloadFile"}}
	for text, want := range map[string]bool{
		"not UTF-8 text: read it with downloadFile":  true,
		"not UTF-8 text: read it with download_file": true,
		"not UTF-8 text": false,
	} {
		if got := mentionsTool(cfg, text, "download_file"); got != want {
			t.Errorf("%q mentions download_file: %v, want %v", text, got, want)
		}
	}
}

// leakage.dataplane-success sends a tool only the arguments it defines:
// a run_code without language or sandbox_id is asked to run the code, not
// refused for them (EXEC-2's question, asked by exec.run-code-bash).
func TestLeakDefinedDropsUndefinedArguments(t *testing.T) {
	tool := &mcp.Tool{Name: "run_code", InputSchema: map[string]any{
		"type": "object", "properties": map[string]any{"code": map[string]any{"type": "string"}},
	}}
	tc := &TestContext{Config: NewConfig(), run: &runState{tools: map[string]*mcp.Tool{"run_code": tool}}}
	got := leakDefined(tc, "run_code", map[string]any{"code": "echo", "language": "bash", "sandbox_id": "x"})
	if len(got) != 1 || got["code"] != "echo" {
		t.Errorf("sent %v, want only code", got)
	}
}
