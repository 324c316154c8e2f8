package conformance

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestClientCheck pins what TOOLS-5 accepts and rejects, in both readings
// of an outputSchema.
func TestClientCheck(t *testing.T) {
	schema := json.RawMessage(`{
		"type": "object",
		"additionalProperties": false,
		"required": ["sandbox_id", "started_at"],
		"properties": {
			"sandbox_id": {"type": "string"},
			"started_at": {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]}
		}
	}`)
	var schemaAny any
	if err := json.Unmarshal(schema, &schemaAny); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		isError    bool
		structured string // "" means none
		want       string // substring of the violation; "" means accepted
	}{
		{"success", false, `{"sandbox_id":"sb1","started_at":"2026-12-03T10:00:00Z"}`, ""},
		{"success with null time", false, `{"sandbox_id":"sb1","started_at":null}`, ""},
		{"success without structuredContent", false, "", "without structuredContent"},
		{"success missing a key", false, `{"sandbox_id":"sb1"}`, "does not match"},
		{"success not an object", false, `["sb1"]`, "not a JSON object"},
		// Only the draft-07 reading asserts formats, as Ajv with ajv-formats
		// does in the TypeScript client; 2020-12 treats format as an annotation.
		{"success with a bad date-time", false, `{"sandbox_id":"sb1","started_at":"yesterday"}`, "draft-07"},
		{"error without structuredContent", true, "", ""},
		{"error with the error object as structuredContent", true, `{"error":{"category":"not_found","recovery":"x"}}`, "tool error's structuredContent does not match"},
		{"error with valid structuredContent", true, `{"sandbox_id":"sb1","started_at":null}`, ""},
	}
	var c clientCheck
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &Result{Tool: "get_sandbox", IsError: tc.isError, arrived: true}
			if tc.structured != "" {
				r.structured = json.RawMessage(tc.structured)
			}
			got := c.check(r, schemaAny)
			switch {
			case tc.want == "" && got != "":
				t.Errorf("rejected: %s", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("violation %q, want it to mention %q", got, tc.want)
			}
		})
	}
	if strings.Contains(c.check(&Result{Tool: "get_sandbox", arrived: true, structured: json.RawMessage(`{"sandbox_id":"sb1","started_at":"yesterday"}`)}, schemaAny), "2020-12") {
		t.Error("the 2020-12 reading asserted a format")
	}
}

// TestClientCheck_BadSchema fails every call of a tool whose outputSchema
// does not compile.
func TestClientCheck_BadSchema(t *testing.T) {
	var c clientCheck
	bad := map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": 7}}}
	r := &Result{Tool: "list_files", arrived: true, structured: json.RawMessage(`{"x":1}`)}
	if got := c.check(r, bad); !strings.Contains(got, "does not compile") {
		t.Errorf("violation %q, want a schema that does not compile", got)
	}
	if got := c.check(&Result{Tool: "list_files", Err: errors.New("protocol error")}, bad); got != "" {
		t.Errorf("a protocol error is not a TOOLS-5 matter: %q", got)
	}
}
