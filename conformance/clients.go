package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	santhosh "github.com/santhosh-tekuri/jsonschema/v6"
)

// TOOLS-5 is checked here, on every result of every spec: [Session.CallRaw]
// runs every call through [clientCheck.check], so a server that the
// official clients cannot read fails whichever spec made the call.
//
// What the clients do, and so what is checked:
//   - The TypeScript SDK's Client.callTool (@modelcontextprotocol/sdk
//     1.32.2, dist/esm/client/index.js, callTool) throws when a tool with
//     an outputSchema returns a success without structuredContent, and
//     validates structuredContent whenever it is present, on errors too,
//     throwing -32602 when it does not match. Its validator
//     (dist/esm/validation/ajv-provider.js) is Ajv with its default
//     dialect, draft-07, formats asserted (ajv-formats).
//   - The MCP specification (2025-11-25, server/tools, "Output Schema")
//     names JSON Schema 2020-12 as the default dialect, and structured
//     results must conform to the output schema.
//
// The kit validates with both: github.com/santhosh-tekuri/jsonschema/v6 in
// draft-07 with format assertion, standing in for Ajv, and
// github.com/google/jsonschema-go (the Go SDK's own validator) in 2020-12.
// A schema that either cannot compile fails every call of its tool.

// readingDraft7 and reading2020 name the two readings in failure messages.
const (
	readingDraft7 = "draft-07 with formats asserted (as Ajv in the TypeScript client)"
	reading2020   = "JSON Schema 2020-12 (as the MCP specification names)"
)

// outputValidator is one tool's outputSchema, compiled in both readings.
type outputValidator struct {
	draft7 *santhosh.Schema
	d2020  *jsonschema.Resolved
	err    error // the schema does not compile in one of the readings
}

// clientCheck holds the compiled output schemas of the advertised tools,
// compiled on first use.
type clientCheck struct {
	mu    sync.Mutex
	tools map[string]*outputValidator // by contract name
}

// validator returns the compiled outputSchema of a tool, or nil when the
// tool advertises none (a client then validates nothing).
func (c *clientCheck) validator(name string, schema any) *outputValidator {
	if schema == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.tools[name]; ok {
		return v
	}
	if c.tools == nil {
		c.tools = map[string]*outputValidator{}
	}
	v := compileOutputSchema(schema)
	c.tools[name] = v
	return v
}

// compileOutputSchema compiles an advertised outputSchema as each client
// reads it.
func compileOutputSchema(schema any) *outputValidator {
	data, err := json.Marshal(schema)
	if err != nil {
		return &outputValidator{err: fmt.Errorf("outputSchema is not JSON: %w", err)}
	}
	v := &outputValidator{}
	doc, err := santhosh.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return &outputValidator{err: fmt.Errorf("outputSchema is not JSON: %w", err)}
	}
	comp := santhosh.NewCompiler()
	comp.DefaultDraft(santhosh.Draft7)
	comp.AssertFormat()
	const loc = "sandboxkit:///outputSchema.json"
	if err := comp.AddResource(loc, doc); err != nil {
		return &outputValidator{err: fmt.Errorf("outputSchema in %s: %w", readingDraft7, err)}
	}
	if v.draft7, err = comp.Compile(loc); err != nil {
		return &outputValidator{err: fmt.Errorf("outputSchema does not compile in %s: %w", readingDraft7, err)}
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		return &outputValidator{err: fmt.Errorf("outputSchema in %s: %w", reading2020, err)}
	}
	if s.Schema == "" {
		s.Schema = "https://json-schema.org/draft/2020-12/schema"
	}
	if v.d2020, err = s.Resolve(nil); err != nil {
		return &outputValidator{err: fmt.Errorf("outputSchema does not resolve in %s: %w", reading2020, err)}
	}
	return v
}

// validate checks structuredContent (its JSON) against both readings.
func (v *outputValidator) validate(structured json.RawMessage) error {
	if v.err != nil {
		return v.err
	}
	inst, err := santhosh.UnmarshalJSON(bytes.NewReader(structured))
	if err != nil {
		return fmt.Errorf("structuredContent is not JSON: %w", err)
	}
	var errs []string
	if err := v.draft7.Validate(inst); err != nil {
		errs = append(errs, fmt.Sprintf("in %s: %v", readingDraft7, oneLine(err.Error())))
	}
	var generic any
	if err := json.Unmarshal(structured, &generic); err != nil {
		return fmt.Errorf("structuredContent is not JSON: %w", err)
	}
	if err := v.d2020.Validate(generic); err != nil {
		errs = append(errs, fmt.Sprintf("in %s: %v", reading2020, oneLine(err.Error())))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// check returns why the official clients would throw instead of handing
// this result to their caller (TOOLS-5), or "" when they accept it. A
// protocol error, or a tool the server does not advertise, gives "".
func (c *clientCheck) check(r *Result, schema any) string {
	if r.Err != nil || !r.arrived {
		return ""
	}
	v := c.validator(r.Tool, schema)
	if v == nil {
		return ""
	}
	kind := "success"
	if r.IsError {
		kind = "tool error"
	}
	// The Go SDK client decodes a JSON null as no structuredContent: the
	// two cannot be told apart here.
	sc := r.structured
	if sc == nil {
		if r.IsError {
			return "" // ERR-2: an error carries no structuredContent
		}
		// TS Client.callTool: "has an output schema but did not return
		// structured content".
		return fmt.Sprintf("%s: a success without structuredContent although the tool has an outputSchema", r.Tool)
	}
	if sc[0] != '{' {
		// The TS SDK's CallToolResultSchema: structuredContent is an object.
		return fmt.Sprintf("%s: the %s's structuredContent is not a JSON object", r.Tool, kind)
	}
	if err := v.validate(sc); err != nil {
		return fmt.Sprintf("%s: the %s's structuredContent does not match the outputSchema %v", r.Tool, kind, err)
	}
	return ""
}

// expectClientsAccept fails the spec when any result it got would make an
// official client throw (TOOLS-5). It runs when the spec's body returns.
func (tc *TestContext) expectClientsAccept() {
	tc.mu.Lock()
	v := append([]string(nil), tc.clientViolations...)
	tc.mu.Unlock()
	if len(v) == 0 {
		return
	}
	sort.Strings(v)
	v = compactStrings(v)
	const most = 5
	more := ""
	if len(v) > most {
		more = fmt.Sprintf(" (and %d more)", len(v)-most)
		v = v[:most]
	}
	tc.fail("TOOLS-5: the official MCP clients would throw a protocol error instead of returning these results: " +
		strings.Join(v, " | ") + more)
}

// compactStrings drops adjacent duplicates of a sorted slice.
func compactStrings(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// oneLine folds a multi-line validator message.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
