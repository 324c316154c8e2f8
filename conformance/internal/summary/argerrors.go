package summary

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The MCP SDKs validate a call's arguments against the tool's input schema
// before the tool runs, and answer a refused call in words of their own.
// When those words name an argument the server requires and the kit never
// sent, the server takes that argument under another name (a --tool-map
// entry adapts it) or names its sandbox in every call (--profile
// explicit-ids): the summary says which, with the entry to write.

// sdkArgError is an SDK's refusal of a call's arguments: the server's
// tool name, the SDK, and the arguments it requires that the call lacked.
type sdkArgError struct {
	tool, sdk string
	missing   []string
}

// tsArgError matches the TypeScript SDK's refusal. McpServer validates
// the arguments with zod and throws
// `Input validation error: Invalid arguments for tool ${toolName}: ${errorMessage}`
// (typescript-sdk v1.29.0 src/server/mcp.ts:278), which the tools/call
// handler turns into a tool error result whose text is the McpError's
// message, "MCP error -32602: Input validation error: ..."
// (src/server/mcp.ts:230); before 1.17 the same words without "Input
// validation error: " were thrown as a protocol error (src/server/mcp.ts
// of 1.12: `Invalid arguments for tool ${request.params.name}: ...`).
var tsArgError = regexp.MustCompile(`Invalid arguments for tool ([\w.-]+): (.*)`)

// zodMissing matches one issue of a zod error for an argument that is
// absent: errorMessage is the ZodError's message, the JSON array of its
// issues, each with "path" before "message" (zod 3: "Required"; zod 4:
// "Invalid input: expected string, received undefined"). The SDK's next
// major prints "path: message" instead (packages/server/src/server/mcp.ts
// on main: "state: Too big: ...").
var (
	zodMissing     = regexp.MustCompile(`"path":\s*\[\s*"([^"]+)"\s*\][^{}]*?"message":\s*"(?:Required|Invalid input: expected [^"]*, received undefined)"`)
	zodFlatMissing = regexp.MustCompile(`(?:^|[;,]\s*)([A-Za-z_][\w-]*): (?:Required|Invalid input: expected [^,;]*, received undefined)`)
)

// pyArgError matches the Python SDK's refusal. FastMCP validates the
// arguments with the tool's pydantic model, named "<tool>Arguments"
// (python-sdk v1.29.0 src/mcp/server/fastmcp/utilities/func_metadata.py:88,
// arg_model.model_validate), and Tool.run wraps the ValidationError as
// `Error executing tool {self.name}: {e}`
// (src/mcp/server/fastmcp/tools/base.py:117), a tool error whose text
// lists each field on its own line followed by "Field required
// [type=missing, ...]".
var (
	pyArgError = regexp.MustCompile(`Error executing tool ([\w.-]+): \d+ validation errors? for [\w.-]+Arguments\b(.*)`)
	pyMissing  = regexp.MustCompile(`(?:^|\s)([A-Za-z_]\w*)\s+Field required \[type=missing`)
)

// parseSDKArgError reads an SDK's argument refusal from a failure line,
// or returns false.
func parseSDKArgError(line string) (sdkArgError, bool) {
	line = strings.Join(strings.Fields(unescapeJSONText(line)), " ")
	if m := pyArgError.FindStringSubmatch(line); m != nil {
		e := sdkArgError{tool: m[1], sdk: "Python MCP SDK (FastMCP, pydantic)"}
		for _, mm := range pyMissing.FindAllStringSubmatch(m[2], -1) {
			e.addMissing(mm[1])
		}
		return e, len(e.missing) > 0
	}
	if m := tsArgError.FindStringSubmatch(line); m != nil {
		e := sdkArgError{tool: m[1], sdk: "TypeScript MCP SDK (McpServer, zod)"}
		for _, mm := range zodMissing.FindAllStringSubmatch(m[2], -1) {
			e.addMissing(mm[1])
		}
		for _, mm := range zodFlatMissing.FindAllStringSubmatch(m[2], -1) {
			e.addMissing(mm[1])
		}
		return e, len(e.missing) > 0
	}
	return sdkArgError{}, false
}

func (e *sdkArgError) addMissing(arg string) {
	if !slices.Contains(e.missing, arg) {
		e.missing = append(e.missing, arg)
	}
}

// unescapeJSONText undoes the JSON string escapes a failure line may quote
// the tool's text with (\" and \n), so the SDK's words read as written.
func unescapeJSONText(s string) string {
	if !strings.Contains(s, `\"`) && !strings.Contains(s, `\n`) {
		return s
	}
	return strings.NewReplacer(`\"`, `"`, `\n`, "\n", `\\`, `\`).Replace(s)
}

// argErrorText is the cause of the SDK's refusal of contract tool's
// calls: what the server requires, and what to write. sandbox_id is the
// explicit-ids design; any other argument a --tool-map entry that renames
// the contract argument the server takes under that name (paired with the
// tool's required contract arguments when they pair one to one).
func argErrorText(contractTool string, e sdkArgError, required []string) string {
	text := fmt.Sprintf("%s: the server's argument validation (%s) refuses the kit's calls: tool %s requires %s, which the kit does not send",
		contractTool, e.sdk, e.tool, strings.Join(e.missing, ", "))
	var rename []string
	for _, a := range e.missing {
		if a == "sandbox_id" {
			text += ". Every call must name its sandbox: the server has no session default; run with --profile explicit-ids"
			continue
		}
		rename = append(rename, a)
	}
	if len(rename) > 0 {
		text += ". If it is a contract argument under another name, map it with --tool-map: " + toolMapEntry(contractTool, e.tool, rename, required)
	}
	return text
}

// toolMapEntry is the --tool-map entry that renames the contract's
// arguments to the server's: paired with the required contract arguments
// the server lacks when their numbers agree, else with a placeholder.
func toolMapEntry(contractTool, serverTool string, serverArgs, required []string) string {
	args := map[string]string{}
	pair := len(required) == len(serverArgs)
	for i, a := range serverArgs {
		from := "<contract argument>"
		if pair {
			from = required[i]
		}
		args[from] = a
	}
	entry := map[string]any{"args": args}
	if serverTool != contractTool {
		entry["name"] = serverTool
	}
	data, _ := json.Marshal(map[string]any{contractTool: entry})
	return string(data)
}
