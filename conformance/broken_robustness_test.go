package conformance

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The broken variants of the robustness specs: each is the reference
// server with one defect the rest of the kit let pass, and the specs
// written to catch it.
func robustnessBrokenVariants() []brokenVariant {
	return []brokenVariant{
		{"background-ignores-max-bytes", FamilyBackground, "ignores get_background_command's max_bytes", backgroundIgnoresMaxBytes},
	}
}

// robustnessFocusedSpecs are the specs each robustness variant must fail
// (run IDs).
var robustnessFocusedSpecs = map[string][]string{
	"background-ignores-max-bytes": {"background.max-bytes-backlog", "background.max-bytes-backlog@2026-07-28"},
}

// backgroundIgnoresMaxBytes drops get_background_command's max_bytes: a
// read returns all the output waiting, up to the default cap (BG-2).
var backgroundIgnoresMaxBytes = middlewareOnly(func(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if name, args, ok := toolCall(method, req); ok && name == "get_background_command" {
			delete(args, "max_bytes")
			raw, _ := json.Marshal(args)
			req.(*mcp.CallToolRequest).Params.Arguments = raw
		}
		return next(ctx, method, req)
	}
})
