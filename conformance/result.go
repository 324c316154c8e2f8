package conformance

import (
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Result is one tools/call as the kit saw it.
type Result struct {
	// Tool is the contract name of the tool called.
	Tool string
	// Err is a protocol or transport error (no result arrived).
	Err error
	// IsError is the result's isError flag.
	IsError bool
	// Structured is structuredContent when it is a JSON object.
	Structured map[string]any
	// Text is every text block, joined by newlines.
	Text string
	// JSON is the whole result as it arrived (content, structuredContent,
	// _meta): what a leak scan reads.
	JSON string
	// TextBlocks counts the text content blocks.
	TextBlocks int
	// ClientViolation says why the official MCP clients would throw a
	// protocol error instead of returning this result (TOOLS-5), or is "".
	ClientViolation string

	arrived    bool            // a result arrived
	structured json.RawMessage // structuredContent as JSON, nil when absent
	errObject  map[string]any  // the "error" object of a tool error's text block
	// fromText is set when the adapter read Structured from the text block
	// because the success carried no structuredContent (TOOLS-3).
	fromText bool
}

// FromText reports whether the result's values were read from its text
// block because it carried no structuredContent (a TOOLS-3 finding).
func (r *Result) FromText() bool { return r.fromText }

func newResult(tool string, res *mcp.CallToolResult, err error) *Result {
	r := &Result{Tool: tool, Err: err}
	if res == nil {
		if err != nil {
			r.JSON = err.Error()
		}
		return r
	}
	raw, _ := json.Marshal(res)
	r.JSON = string(raw)
	r.arrived = true
	r.IsError = res.IsError
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
			r.TextBlocks++
			if res.IsError && r.errObject == nil {
				// ERR-2: the error object is the JSON of the (first) text block.
				var env struct {
					Error map[string]any `json:"error"`
				}
				if json.Unmarshal([]byte(tc.Text), &env) == nil {
					r.errObject = env.Error
				}
			}
		}
	}
	r.Text = strings.Join(texts, "\n")
	if res.StructuredContent != nil {
		data, _ := json.Marshal(res.StructuredContent)
		r.structured = data
		var m map[string]any
		if json.Unmarshal(data, &m) == nil {
			r.Structured = m
		}
	}
	return r
}

// ErrorObject returns the "error" object of a tool error's text block
// (ERR-2), or nil.
func (r *Result) ErrorObject() map[string]any {
	return r.errObject
}

// Category returns the error category of a tool error, or "".
func (r *Result) Category() string {
	s, _ := r.ErrorObject()["category"].(string)
	return s
}

// Field returns the field a validation error names, or "".
func (r *Result) Field() string {
	s, _ := r.ErrorObject()["field"].(string)
	return s
}

// String returns the ID in a result field (such as "sandbox_id"), or "".
func (r *Result) String(key string) string {
	s, _ := r.Structured[key].(string)
	return s
}
