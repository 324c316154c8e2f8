package conformance

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/server"
)

// The BIN-3 specs apply only to a server whose binary tools advertise
// transfer "url": the reference server does; one without the argument
// (every server written before BIN-3), or without the "url" value, is
// skipped, not failed.
func TestTransferURLSpecsApplicable(t *testing.T) {
	ref := map[string]*mcp.Tool{}
	for _, tool := range server.AllTools(nil) {
		ref[tool.Name()] = tool.Def
	}
	if !xferOffered(&TestContext{run: &runState{tools: ref}}) {
		t.Fatal("the reference server's tools do not offer transfer URLs")
	}
	inlineOnly := map[string]any{"type": "object", "properties": map[string]any{
		"transfer": map[string]any{"type": "string", "enum": []any{"inline"}}}}
	for name, tools := range map[string]map[string]*mcp.Tool{
		"no transfer argument": {
			"upload_file":   {Name: "upload_file", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{}}}},
			"download_file": ref["download_file"],
		},
		"inline only": {"upload_file": ref["upload_file"], "download_file": {Name: "download_file", InputSchema: inlineOnly}},
		"no tools":    {},
	} {
		if xferOffered(&TestContext{run: &runState{tools: tools}}) {
			t.Errorf("%s: the BIN-3 specs would run", name)
		}
	}
}
