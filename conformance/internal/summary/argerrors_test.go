package summary

import (
	"bytes"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

// The SDKs' own words for a refused call, as their sources write them
// (see argerrors.go for file:line) and as a spec quotes them.
const (
	// TypeScript SDK 1.17 to 1.29 with zod 3: a tool error whose text is
	// the McpError's message, the ZodError's message pretty-printed.
	zod3Missing = "MCP error -32602: Input validation error: Invalid arguments for tool execute_code: [\n  {\n    \"code\": \"invalid_type\",\n" +
		"    \"expected\": \"string\",\n    \"received\": \"undefined\",\n    \"path\": [\n      \"source\"\n    ],\n    \"message\": \"Required\"\n  }\n]"
	// The same SDK with zod 4, whose issues put "expected" first.
	zod4MissingID = "MCP error -32602: Input validation error: Invalid arguments for tool run_code: [\n  {\n    \"expected\": \"string\",\n" +
		"    \"code\": \"invalid_type\",\n    \"path\": [\n      \"sandbox_id\"\n    ],\n    \"message\": \"Invalid input: expected string, received undefined\"\n  }\n]"
	// The SDK's next major prints "path: message".
	zodFlat = "Input validation error: Invalid arguments for tool run_code: source: Invalid input: expected string, received undefined"
	// A zod issue that is not a missing argument.
	zodTooBig = "MCP error -32602: Input validation error: Invalid arguments for tool get-alerts: [\n  {\n    \"code\": \"too_big\",\n" +
		"    \"path\": [\n      \"state\"\n    ],\n    \"message\": \"String must contain at most 2 character(s)\"\n  }\n]"
	// Python SDK (FastMCP): Tool.run wraps pydantic's ValidationError.
	pydanticMissing = "Error executing tool run_code: 1 validation error for run_codeArguments\nsource\n  Field required [type=missing, " +
		"input_value={'code': 'print(1)'}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.11/v/missing"
	pydanticTwo = "Error executing tool kill: 2 validation errors for killArguments\nsandbox_id\n  Field required [type=missing, " +
		"input_value={}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.11/v/missing\n" +
		"reason\n  Field required [type=missing, input_value={}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.11/v/missing"
)

func TestSDKArgErrors(t *testing.T) {
	cases := []struct {
		name, msg string
		tool      string // the server's tool; "" when not recognised
		missing   string
	}{
		{"zod 3 Required", zod3Missing, "execute_code", "source"},
		{"zod 4 received undefined", zod4MissingID, "run_code", "sandbox_id"},
		{"zod flat", zodFlat, "run_code", "source"},
		{"zod, not a missing argument", zodTooBig, "", ""},
		{"pydantic Field required", pydanticMissing, "run_code", "source"},
		{"pydantic, two fields", pydanticTwo, "kill", "sandbox_id,reason"},
		{"quoted as JSON text", `run_code: unexpected tool error: {"content":[{"type":"text","text":` + jsonQuote(zod3Missing) + `}]}`, "execute_code", "source"},
		{"another error", "run_code: unexpected tool error: sandbox not found", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, ok := parseSDKArgError(strings.Join(strings.Fields(c.msg), " "))
			if ok != (c.tool != "") || ok && (e.tool != c.tool || strings.Join(e.missing, ",") != c.missing) {
				t.Errorf("parse = %+v, %v; want tool %q missing %q", e, ok, c.tool, c.missing)
			}
		})
	}
}

// jsonQuote is s as a JSON string.
func jsonQuote(s string) string {
	r := strings.NewReplacer(`"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// The summary names the SDK, the argument, and the exact fix: the
// --tool-map entry (paired with the contract's required argument) or
// --profile explicit-ids for a server that requires sandbox_id.
func TestSummarySuggestsFixForSDKArgErrors(t *testing.T) {
	r := ginkgo.Report{SpecReports: []types.SpecReport{
		failedSpec("exec.run-code", "EXEC-2", "run_code: unexpected tool error: "+zod3Missing),
		failedSpec("exec.run-code-bash", "EXEC-2", "run_code: unexpected tool error: "+zod3Missing),
		failedSpec("files.write", "FILE-1", "write_file: unexpected tool error: "+strings.ReplaceAll(zod4MissingID, "run_code", "write_file")),
		failedSpec("exec.python", "EXEC-2", "run_code: unexpected tool error: "+pydanticMissing),
	}}
	var b bytes.Buffer
	writeFailures(&b, r, testCatalog())
	out := b.String()
	for _, want := range []string{
		`run_code: the server's argument validation (TypeScript MCP SDK (McpServer, zod)) refuses the kit's calls: tool execute_code requires source`,
		`map it with --tool-map: {"run_code":{"args":{"code":"source"},"name":"execute_code"}}`,
		"       2 specs: exec.run-code, exec.run-code-bash",
		`tool write_file requires sandbox_id, which the kit does not send. Every call must name its sandbox: the server has no session default; run with --profile explicit-ids`,
		`(Python MCP SDK (FastMCP, pydantic)) refuses the kit's calls: tool run_code requires source`,
		`{"run_code":{"args":{"code":"source"}}}`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary lacks %q:\n%s", want, out)
		}
	}
}
