package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool is one MCP tool: its definition (name, description, hand-written
// input and output schemas, annotations) and its handler. Build tools with
// their constructors ([ListSandboxes], [GetSandbox], ...) or all at once with
// [AllTools].
type Tool struct {
	// Def is the definition advertised in tools/list.
	Def *mcp.Tool

	handler  handlerFunc
	props    map[string]*jsonschema.Resolved // each top-level property, resolved once
	required []string
}

// Name returns the tool's name.
func (t Tool) Name() string { return t.Def.Name }

// handlerFunc runs a tool whose arguments have passed validation. It returns
// the structured result, or an error that is turned into a tool error.
type handlerFunc func(ctx context.Context, sess *session, a args) (any, error)

// newTool checks a definition and resolves the subschema of each input
// property, so that calls validate field by field. A malformed definition is
// a programming error and panics.
func newTool(def *mcp.Tool, h handlerFunc) Tool {
	in, ok := def.InputSchema.(*jsonschema.Schema)
	if !ok || in == nil || in.Type != "object" {
		panic(fmt.Sprintf("server: tool %q: input schema must be a *jsonschema.Schema of type object", def.Name))
	}
	if in.AdditionalProperties == nil || in.AdditionalProperties.Not == nil {
		panic(fmt.Sprintf("server: tool %q: input schema must set additionalProperties: false", def.Name))
	}
	if def.OutputSchema == nil || def.Description == "" || def.Annotations == nil {
		panic(fmt.Sprintf("server: tool %q: output schema, description and annotations are required", def.Name))
	}
	t := Tool{Def: def, handler: h, props: map[string]*jsonschema.Resolved{}, required: slices.Clone(in.Required)}
	for name, ps := range in.Properties {
		r, err := ps.Resolve(nil)
		if err != nil {
			panic(fmt.Sprintf("server: tool %q: property %q: %v", def.Name, name, err))
		}
		t.props[name] = r
	}
	for _, name := range t.required {
		if _, ok := t.props[name]; !ok {
			panic(fmt.Sprintf("server: tool %q: required property %q is not defined", def.Name, name))
		}
	}
	if _, err := in.Resolve(nil); err != nil {
		panic(fmt.Sprintf("server: tool %q: input schema: %v", def.Name, err))
	}
	return t
}

// args are a call's arguments after validation: every key is a defined
// property and every value satisfies that property's schema.
type args map[string]json.RawMessage

// safeName matches argument names that may be repeated in an error: an
// unknown key is named only when it looks like an identifier, so that a key
// cannot smuggle a value into the answer.
var safeName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,63}$`)

// validate checks raw arguments against the tool's schema (VAL-1..6): an
// object, no unknown key (VAL-4), every required key, every present value
// valid for its own subschema. The error names one field and never holds the
// submitted value.
func (t Tool) validate(raw json.RawMessage) (args, *ToolError) {
	raw = bytes.TrimSpace(raw)
	a := args{}
	if len(raw) != 0 && !bytes.Equal(raw, []byte("null")) {
		if raw[0] != '{' {
			return nil, invalidField("arguments")
		}
		if err := json.Unmarshal(raw, (*map[string]json.RawMessage)(&a)); err != nil {
			return nil, invalidField("arguments")
		}
	}
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// VAL-4: an argument the tool does not define is rejected.
	for _, k := range keys {
		if _, ok := t.props[k]; !ok {
			if safeName.MatchString(k) {
				return nil, invalidField(k)
			}
			return nil, invalidField("arguments")
		}
	}
	for _, k := range t.required {
		if _, ok := a[k]; !ok {
			return nil, invalidField(k)
		}
	}
	for _, k := range keys {
		var v any
		if err := json.Unmarshal(a[k], &v); err != nil {
			return nil, invalidField(k)
		}
		// VAL-1/2/3/5: type (null, booleans and strings are not integers;
		// 1.5 is not an integer), bounds, minLength (an explicit "" is
		// never the default), envs of string to string.
		if err := t.props[k].Validate(v); err != nil {
			return nil, invalidField(k)
		}
	}
	return a, nil
}

// has reports whether the argument was given.
func (a args) has(name string) bool {
	_, ok := a[name]
	return ok
}

// str returns a string argument, or "" when absent.
func (a args) str(name string) string {
	var s string
	if raw, ok := a[name]; ok {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}

// integer returns an integer argument, or def when absent. The schema has
// already checked that the value is integral and in range.
func (a args) integer(name string, def int64) int64 {
	raw, ok := a[name]
	if !ok {
		return def
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return def
	}
	return int64(f)
}

// strMap returns an object-of-strings argument, or nil when absent.
func (a args) strMap(name string) map[string]string {
	raw, ok := a[name]
	if !ok {
		return nil
	}
	var m map[string]string
	_ = json.Unmarshal(raw, &m)
	return m
}

// result builds a successful result: structuredContent and the same JSON as
// one text block (TOOLS-3).
func result(v any) (*mcp.CallToolResult, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{
		StructuredContent: json.RawMessage(data),
		Content:           []mcp.Content{&mcp.TextContent{Text: string(data)}},
	}, nil
}

// errorResult builds a failed result (ERR-1, ERR-2, TOOLS-5): isError and
// {"error": {...}} as the one text block, so that a model still reads the
// category and the hint, and no structuredContent. The outputSchema
// describes only the success shape, and the official clients validate any
// structuredContent against it, errors included (the TypeScript SDK's
// Client.callTool, @modelcontextprotocol/sdk 1.32.2 dist/esm/client/index.js);
// an error object there would turn the tool error into a thrown protocol
// error. The ToolError is kept on the result for server-side logging.
func errorResult(te *ToolError) *mcp.CallToolResult {
	data, err := json.Marshal(errorEnvelope{Error: te})
	if err != nil {
		data = []byte(`{"error":{"category":"internal"}}`)
	}
	res := &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: string(data)}},
	}
	res.SetError(te)
	return res
}
