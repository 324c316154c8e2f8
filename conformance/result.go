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
}

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
	r.IsError = res.IsError
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
			r.TextBlocks++
		}
	}
	r.Text = strings.Join(texts, "\n")
	if res.StructuredContent != nil {
		data, _ := json.Marshal(res.StructuredContent)
		var m map[string]any
		if json.Unmarshal(data, &m) == nil {
			r.Structured = m
		}
	}
	return r
}

// ErrorObject returns structuredContent.error of a tool error, or nil.
func (r *Result) ErrorObject() map[string]any {
	if r.Structured == nil {
		return nil
	}
	e, _ := r.Structured["error"].(map[string]any)
	return e
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
