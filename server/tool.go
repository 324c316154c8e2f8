package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"

	"github.com/sandboxkit/sandboxkit/internal/toolset"
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
	decoders map[string]decoder              // properties checked by code instead of props
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
	if def.OutputSchema == nil || def.Description == "" {
		panic(fmt.Sprintf("server: tool %q: output schema and description are required", def.Name))
	}
	def.Annotations = contractAnnotations(def.Name) // TOOLS-1
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

// contractAnnotations returns the annotations the contract's tool table
// gives the tool (TOOLS-1, read through package toolset), every hint
// written out, and a title made of its name ("create_sandbox": "Create
// sandbox"). A tool the contract lacks is a programming error and panics.
func contractAnnotations(name string) *mcp.ToolAnnotations {
	t, ok := toolset.Lookup(name)
	if !ok {
		panic(fmt.Sprintf("server: tool %q is not in the contract's tool table (conformance/contract/tools.md; then go generate ./internal/toolset)", name))
	}
	title := strings.ReplaceAll(name, "_", " ")
	return &mcp.ToolAnnotations{
		Title:           strings.ToUpper(title[:1]) + title[1:],
		ReadOnlyHint:    t.ReadOnly,
		DestructiveHint: ptr(t.Destructive),
		IdempotentHint:  t.Idempotent,
		OpenWorldHint:   ptr(t.OpenWorld),
	}
}

// args are a call's arguments after validation, each decoded once: every
// key is a defined property and every value satisfies that property's
// schema. Values are as encoding/json decodes into any (strings, float64,
// bool, maps, slices), except those of a property with its own decoder
// (upload_file's data_base64 is the decoded bytes).
type args map[string]any

// decoder checks and converts one argument in place of its schema's
// validator, for values too large to run the generic validator over (a
// pattern regexp over megabytes of base64). It must enforce everything the
// advertised schema says about the property.
type decoder func(v any) (any, *ToolError)

// withDecoder makes name's value checked and converted by dec instead of its
// resolved schema. The advertised schema is unchanged.
func (t Tool) withDecoder(name string, dec decoder) Tool {
	if _, ok := t.props[name]; !ok {
		panic(fmt.Sprintf("server: tool %q: decoder for undefined property %q", t.Def.Name, name))
	}
	decoders := maps.Clone(t.decoders)
	if decoders == nil {
		decoders = map[string]decoder{}
	}
	decoders[name] = dec
	t.decoders = decoders
	return t
}

// safeName matches argument names that may be repeated in an error: an
// unknown key is named only when it looks like an identifier, so that a key
// cannot smuggle a value into the answer.
var safeName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,63}$`)

// validate checks raw arguments against the tool's schema (VAL-1..6): an
// object, no unknown key (VAL-4), every required key, every present value
// valid for its own subschema. The object is decoded once, and each value
// validated as decoded. The error names one field and never holds the
// submitted value.
func (t Tool) validate(raw json.RawMessage) (args, *ToolError) {
	raw = bytes.TrimSpace(raw)
	a := args{}
	if len(raw) != 0 && !bytes.Equal(raw, []byte("null")) {
		if raw[0] != '{' {
			return nil, invalidField("arguments")
		}
		// segmentio/encoding (the SDK's own decoder) parses in one pass,
		// where encoding/json validates the whole input before decoding it:
		// 3x faster on an upload's megabytes, the same values and errors
		// (the error text is never shown).
		if err := segjson.Unmarshal(raw, (*map[string]any)(&a)); err != nil {
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
		if dec := t.decoders[k]; dec != nil {
			v, terr := dec(a[k])
			if terr != nil {
				return nil, terr
			}
			a[k] = v
			continue
		}
		// VAL-1/2/3/5: type (null, booleans and strings are not integers;
		// 1.5 is not an integer), bounds, minLength (an explicit "" is
		// never the default), envs of string to string.
		if err := t.props[k].Validate(a[k]); err != nil {
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
	s, _ := a[name].(string)
	return s
}

// bytes returns an argument its decoder turned into bytes, or nil.
func (a args) bytes(name string) []byte {
	b, _ := a[name].([]byte)
	return b
}

// integer returns an integer argument, or def when absent. The schema has
// already checked that the value is integral and in range.
func (a args) integer(name string, def int64) int64 {
	f, ok := a[name].(float64)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return def
	}
	return int64(f)
}

// strMap returns an object-of-strings argument, or nil when absent.
func (a args) strMap(name string) map[string]string {
	m, ok := a[name].(map[string]any)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// textMirrored marks a result value that goes to the SDK as itself, not as
// its JSON: encoding/json re-validates and compacts every json.RawMessage
// (and every Marshaler's output) it writes, which for a download is a scan
// of megabytes per marshal, while a plain struct's string field is written
// straight out.
type textMirrored interface{ textMirrored() }

// textShort is a result whose text block leaves out a bulky member that
// structuredContent carries (TOOLS-3: an inline download's data_base64,
// which would otherwise travel twice); textForm is the value whose JSON
// the text block holds. A textShort value is textMirrored too: it goes to
// the SDK as itself, and is marshalled once, by the SDK.
type textShort interface {
	textMirrored
	textForm() any
}

// result builds a successful result: structuredContent and its JSON as one
// text block (TOOLS-3). A textMirrored value is passed as itself. A
// textShort value's text block holds its textForm instead, unless all is
// set (a client that reads only the text block).
func result(v any, all bool) (*mcp.CallToolResult, error) {
	text := v
	if ts, ok := v.(textShort); ok && !all {
		text = ts.textForm()
	}
	data, err := json.Marshal(text)
	if err != nil {
		return nil, err
	}
	var structured any = json.RawMessage(data)
	if _, ok := v.(textMirrored); ok {
		structured = v
	}
	return &mcp.CallToolResult{
		StructuredContent: structured,
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
