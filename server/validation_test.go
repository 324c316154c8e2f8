package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// validArgs are arguments each tool accepts; a case breaks one of them.
var validArgs = map[string]map[string]any{
	"create_sandbox":           {},
	"kill_sandbox":             {},
	"list_sandboxes":           {},
	"get_sandbox":              {},
	"set_sandbox_timeout":      {"timeout": 60},
	"run_command":              {"command": "echo hi"},
	"run_code":                 {"code": "print(1)"},
	"read_file":                {"path": "/tmp/x"},
	"write_file":               {"path": "/tmp/x", "content": "x"},
	"list_files":               {"path": "/tmp"},
	"start_background_command": {"command": "sleep 1"},
	"get_background_command":   {"command_id": "bg-0123456789abcdef"},
	"kill_background_command":  {"command_id": "bg-0123456789abcdef"},
	"upload_file":              {"path": "/tmp/x", "data_base64": "QUJD"},
	"download_file":            {"path": "/tmp/x"},
}

// secretMark is in every string a case submits, to prove it is not echoed.
const secretMark = "S3CRETMARK"

// badCase is one invalid call.
type badCase struct {
	name  string
	field string // the field the error must name
	args  any    // map[string]any or json.RawMessage
	echo  string // a string that must not appear in the result ("" for none)
	// category is the expected category; "" means invalid_argument.
	category string
}

func with(base map[string]any, k string, v any) map[string]any {
	m := maps.Clone(base)
	m[k] = v
	return m
}

func without(base map[string]any, k string) map[string]any {
	m := maps.Clone(base)
	delete(m, k)
	return m
}

// casesFor derives invalid cases from a tool's advertised input schema, so
// that every bounded argument of every tool is covered (VAL-1..6).
func casesFor(tool Tool) []badCase {
	in := tool.Def.InputSchema.(*jsonschema.Schema)
	base := validArgs[tool.Name()]
	var cases []badCase
	props := slices.Sorted(maps.Keys(in.Properties))
	for _, p := range props {
		s := in.Properties[p]
		add := func(label string, v any, echo string) {
			cases = append(cases, badCase{name: p + " " + label, field: p, args: with(base, p, v), echo: echo})
		}
		add("null", nil, "")
		switch {
		case s.Type == "integer":
			// VAL-1: booleans, strings, non-integral numbers and null are not integers.
			add("boolean", true, "")
			add("string", "7", "")
			add("numeric string with mark", "7"+secretMark, secretMark)
			add("non-integral", 1.5, "1.5")
			add("object", map[string]any{"v": 1}, "")
			// VAL-2: out of range on both sides.
			lo, hi := int64(*s.Minimum), int64(*s.Maximum)
			add("below minimum", lo-1, "")
			add("far below minimum", lo-987654, fmt.Sprint(lo-987654))
			add("above maximum", hi+1, fmt.Sprint(hi+1))
			add("far above maximum", hi+987654321, fmt.Sprint(hi+987654321))
			add("huge", 1e300, "1e+300")
		case s.Type == "string":
			add("number", 12345, "")
			add("boolean", false, "")
			add("array", []any{secretMark}, secretMark)
			// VAL-3: an explicit "" is rejected, for sandbox_id and every other string.
			if s.MinLength != nil || s.Pattern == commandIDPattern || s.Pattern == cursorPattern || len(s.Enum) > 0 {
				add("empty", "", "")
			}
			switch {
			case s.Pattern == pathPattern:
				add("malformed", secretMark+"\x00/x", secretMark)
			case s.Pattern != "" || len(s.Enum) > 0:
				add("malformed", secretMark+" !@#$", secretMark)
			}
			if s.MaxLength != nil && *s.MaxLength < 1<<16 {
				add("too long", strings.Repeat(secretMark, *s.MaxLength/len(secretMark)+1), secretMark)
			}
		case s.Type == "object": // envs (VAL-5)
			add("string", secretMark, secretMark)
			add("array", []any{secretMark}, secretMark)
			add("number", 5, "")
			add("non-string value", map[string]any{"A": 5}, "")
			add("null value", map[string]any{"A": nil}, "")
			add("object value", map[string]any{"A": map[string]any{"x": secretMark}}, secretMark)
			add("bad name", map[string]any{"1" + secretMark: "x"}, secretMark)
			many := map[string]any{}
			for i := range maxEnvs + 1 {
				many[fmt.Sprintf("V%d", i)] = secretMark
			}
			add("too many", many, secretMark)
		}
	}
	// VAL-4: an argument the tool does not define.
	for _, extra := range []string{"team", "sandbox_domain", "api_key"} {
		cases = append(cases, badCase{name: "unknown " + extra, field: extra, args: with(base, extra, secretMark), echo: secretMark})
	}
	cases = append(cases, badCase{name: "unknown key with odd name", field: "arguments", args: with(base, secretMark+" key!", 1), echo: secretMark})
	for _, r := range in.Required {
		cases = append(cases, badCase{name: "missing " + r, field: r, args: without(base, r)})
	}
	for _, raw := range []string{`[1,2]`, `"` + secretMark + `"`, `7`} {
		cases = append(cases, badCase{name: "arguments " + raw, field: "arguments", args: json.RawMessage(raw), echo: secretMark})
	}
	return cases
}

// extraCases are checks the handlers make before any call.
var extraCases = map[string][]badCase{
	"upload_file": {
		{name: "bad padding", field: "data_base64", args: map[string]any{"path": "/tmp/x", "data_base64": "QUJ"}},
		{name: "bad char", field: "data_base64", args: map[string]any{"path": "/tmp/x", "data_base64": secretMark + "!==="}, echo: secretMark},
		{name: "line break", field: "data_base64", args: map[string]any{"path": "/tmp/x", "data_base64": "QUJD\nREVG"}},
		{name: "padding inside", field: "data_base64", args: map[string]any{"path": "/tmp/x", "data_base64": "QQ==QUJD"}},
		{name: "url alphabet", field: "data_base64", args: map[string]any{"path": "/tmp/x", "data_base64": "-_-_"}},
	},
	"list_sandboxes": {
		{name: "status unknown", field: "status", args: map[string]any{"status": "killing"}},
		{name: "provider unknown", field: "provider", args: map[string]any{"provider": "nope"}},
		{name: "region unknown", field: "region", args: map[string]any{"region": "mars-1"}},
	},
	"create_sandbox": {
		{name: "cpu zero", field: "cpu", args: map[string]any{"cpu": 0}},
		{name: "memory negative", field: "memory", args: map[string]any{"memory": -512}},
		{name: "timeout zero", field: "timeout", args: map[string]any{"timeout": 0}},
		{name: "timeout over a day", field: "timeout", args: map[string]any{"timeout": 86401}},
		{name: "provider unknown", field: "provider", args: map[string]any{"provider": "nope"}},
		{name: "region unknown", field: "region", args: map[string]any{"region": "mars-1"}},
		{name: "cpu on a fixed-size provider", field: "cpu", args: map[string]any{"cpu": 2}},
		{name: "memory on a fixed-size provider", field: "memory", args: map[string]any{"memory": 1024}},
	},
	"get_sandbox": {
		{name: "unknown provider prefix", field: "sandbox_id", args: map[string]any{"sandbox_id": "nope:abc"}},
	},
	"set_sandbox_timeout": {
		{name: "timeout string number", field: "timeout", args: json.RawMessage(`{"timeout":"600"}`)},
		{name: "timeout true", field: "timeout", args: json.RawMessage(`{"timeout":true}`)},
		{name: "timeout 1.5", field: "timeout", args: json.RawMessage(`{"timeout":1.5}`)},
		{name: "explicit empty sandbox_id", field: "sandbox_id", args: map[string]any{"sandbox_id": "", "timeout": 60}},
	},
	"get_background_command": {
		{name: "unknown command_id", field: "command_id", category: "not_found", args: map[string]any{"command_id": "bg-ffffffffffffffff", "cursor": "999.999"}},
	},
	"kill_background_command": {
		{name: "unknown command_id", field: "command_id", category: "not_found", args: map[string]any{"command_id": "bg-ffffffffffffffff", "signal": "SIGKILL"}},
	},
}

// TestValidation runs every invalid case against every tool: a tool error
// of category invalid_argument naming the field (VAL-6), without the
// submitted value anywhere in the result (VAL-6), with zero platform
// requests and no change of session state (VAL-7).
func TestValidation(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect()
	// A session with state: a default, owned sandbox.
	c.ok("create_sandbox", map[string]any{})
	sess := c.session()
	before := snapshotSession(sess)
	for _, tool := range AllTools(&Deps{}) {
		cases := append(casesFor(tool), extraCases[tool.Name()]...)
		for _, tc := range cases {
			t.Run(tool.Name()+"/"+tc.name, func(t *testing.T) {
				n := h.fp.Journal().Len()
				res := c.call(tool.Name(), tc.args)
				te := toolErrorOf(t, tool.Name(), res)
				wantCategory := "invalid_argument"
				if tc.category != "" {
					wantCategory = tc.category
				}
				if string(te.Category) != wantCategory {
					t.Errorf("category = %q, want %q", te.Category, wantCategory)
				}
				if te.Field != tc.field {
					t.Errorf("field = %q, want %q", te.Field, tc.field)
				}
				text := resultJSON(t, res)
				if tc.echo != "" && strings.Contains(text, tc.echo) {
					t.Errorf("result echoes the submitted value: %s", text)
				}
				if strings.Contains(text, secretMark) {
					t.Errorf("result echoes a part of the submitted value: %s", text)
				}
				if got := journalFrom(h.fp, n); len(got) != 0 {
					t.Errorf("VAL-7: %d platform requests: %v", len(got), ops(got))
				}
				if after := snapshotSession(sess); after != before {
					t.Errorf("VAL-7: session state changed: %s -> %s", before, after)
				}
			})
		}
	}
}

// snapshotSession renders a session's state for comparison.
func snapshotSession(s *session) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var owned []string
	for id, o := range s.owned {
		owned = append(owned, fmt.Sprintf("%s=%s", id, o.renewal))
	}
	sort.Strings(owned)
	return fmt.Sprintf("default=%q owned=%v commands=%d closed=%v", s.defaultID, owned, len(s.commands), s.closed)
}

// TestValidationAcceptsEdges: the bounds themselves, and integral numbers
// written with a fraction, are accepted.
func TestValidationAcceptsEdges(t *testing.T) {
	tools := map[string]Tool{}
	for _, tool := range AllTools(&Deps{}) {
		tools[tool.Name()] = tool
	}
	for _, tc := range []struct {
		tool string
		args string
	}{
		{"list_sandboxes", `{"limit":1}`},
		{"list_sandboxes", `{"limit":100,"offset":0}`},
		{"list_sandboxes", `{"limit":5.0}`},
		{"list_sandboxes", `{"offset":10000,"status":"paused"}`},
		{"create_sandbox", `{"timeout":1}`},
		{"create_sandbox", `{"timeout":86400,"envs":{"A":"b","_x1":""},"template":"base","cpu":1,"memory":1}`},
		{"set_sandbox_timeout", `{"timeout":86400,"sandbox_id":"e2b:abc"}`},
		{"set_sandbox_timeout", `{"timeout":1}`},
		{"run_command", `{"command":"x","timeout":3600}`},
		{"list_files", `{"path":"/","depth":10}`},
		{"get_background_command", `{"command_id":"bg-0123456789abcdef","cursor":"0.0","max_bytes":65536}`},
		{"upload_file", `{"path":"/x","data_base64":""}`},
		{"upload_file", `{"path":"/x","data_base64":"QQ=="}`},
		{"download_file", `{"path":"/x","max_bytes":16777216}`},
		{"get_sandbox", `null`},
		{"get_sandbox", `{}`},
	} {
		t.Run(tc.tool+" "+tc.args, func(t *testing.T) {
			if _, err := tools[tc.tool].validate(json.RawMessage(tc.args)); err != nil {
				t.Errorf("rejected: %v", err)
			}
		})
	}
}

// TestValidationErrorShape pins the exact error of one invalid call.
func TestValidationErrorShape(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect()
	res := c.call("set_sandbox_timeout", map[string]any{"timeout": true})
	want := `{"error":{"category":"invalid_argument","field":"timeout","recovery":"Check the arguments against the tool's input schema and try again."}}`
	// ERR-2: the error object is the one text block, and there is no
	// structuredContent for a client to validate against the outputSchema.
	if got := errorText(t, "set_sandbox_timeout", res); got != want {
		t.Errorf("text block = %s\nwant %s", got, want)
	}
	if res.StructuredContent != nil {
		t.Errorf("structuredContent = %v, want none", res.StructuredContent)
	}
	if !res.IsError {
		t.Error("isError is false")
	}
}
