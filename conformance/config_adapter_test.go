package conformance

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

// A tool map file is validated with errors that name the entry; the plain
// form keeps working.
func TestConfigToolMap(t *testing.T) {
	m, err := ParseToolMap([]byte(`{"run_command": "exec", "set_sandbox_timeout": {"name": "setTimeout",
		"args": {"sandbox_id": "sandboxId", "timeout": {"name": "timeoutMs", "scale": 1000}},
		"result": {"from": "pattern", "fields": {"sandbox_id": "ID: (\\S+)"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := NewConfig()
	cfg.Tools = m
	if cfg.toolName("run_command") != "exec" || cfg.toolName("set_sandbox_timeout") != "setTimeout" || cfg.toolName("read_file") != "read_file" {
		t.Errorf("tool names: %q %q", cfg.toolName("run_command"), cfg.toolName("set_sandbox_timeout"))
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("a valid map fails validation: %v", err)
	}
	a := m["set_sandbox_timeout"]
	got := string(a.adaptArgs(json.RawMessage(`{"sandbox_id":"x","timeout":60}`)))
	if got != `{"sandboxId":"x","timeoutMs":60000}` {
		t.Errorf("adapted arguments %s", got)
	}
	if got := string(a.adaptArgs(json.RawMessage(`{"timeout":1.5}`))); got != `{"timeoutMs":1.5}` {
		t.Errorf("a non-integer timeout must stay unscaled, got %s", got)
	}
	r := &Result{arrived: true, Text: "Timeout set. ID: sbx-42"}
	a.normalise(r)
	if r.String("sandbox_id") != "sbx-42" || !r.FromText() {
		t.Errorf("pattern result: %v (from text %v)", r.Structured, r.FromText())
	}
	r = &Result{arrived: true, Text: `{"sandboxId": "s1"}`}
	ToolAdapter{Result: ResultAdapter{Fields: map[string]string{"sandbox_id": "sandboxId"}}}.normalise(r)
	if r.String("sandbox_id") != "s1" || !r.FromText() {
		t.Errorf("a success without structuredContent is read from its text block: %v", r.Structured)
	}

	r = &Result{arrived: true, structured: json.RawMessage(`{"exitCode":0}`), Structured: map[string]any{"exitCode": 0.0}}
	ToolAdapter{Result: ResultAdapter{Fields: map[string]string{"exit_code": "exitCode"}}}.normalise(r)
	if _, ok := r.Structured["exit_code"]; !ok || r.FromText() || string(r.structured) != `{"exitCode":0}` {
		t.Errorf("structuredContent members are renamed, the result as it arrived kept: %v %s", r.Structured, r.structured)
	}

	m, err = ParseToolMap([]byte(`{"set_sandbox_timeout": {"result": {"fields": {"sandbox_id": "sandboxId", "timeout": {"name": "timeoutMs", "scale": 1000}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	r = &Result{arrived: true, structured: json.RawMessage(`{}`), Structured: map[string]any{"success": true, "sandboxId": "s1", "timeoutMs": 120000.0}}
	m["set_sandbox_timeout"].normalise(r)
	if r.Structured["timeout"] != 120.0 || r.Structured["sandbox_id"] != "s1" || len(r.Structured) != 3 {
		t.Errorf("a result member in milliseconds is read back as the contract's seconds: %v", r.Structured)
	}

	for _, c := range []struct{ file, want string }{
		{`{"get_sandbox": {"result": {"fields": {"timeout": {"name": "t", "scale": -1}}}}}`, `result field "timeout": scale -1 must be positive`},
		{`{"get_sandbox": {"result": {"fields": {"timeout": {"name": "t", "unit": "ms"}}}}}`, `result field "timeout": want the server's member name or {"name", "scale"}`},
		{`{"get_sandbox": {"result": {"fields": {"timeout": {"scale": 1000}}}}}`, `result field "timeout" maps to an empty name`},
		{`{"get_sandbox": {"result": {"from": "pattern", "fields": {"timeout": {"name": "T: ([0-9]+)", "scale": 1000}}}}}`, `a scale needs a number, and "pattern" reads strings`},
		{`{"no_such_tool": "x"}`, `entry "no_such_tool": not a contract tool`},
		{`{"run_command": {"name": "x", "argz": {}}}`, `entry "run_command": want the server's tool name or an object`},
		{`{"read_file": {"result": {"from": "pattern", "fields": {"content": "("}}}}`, `entry "read_file": result field "content": bad regular expression`},
		{`{"read_file": {"result": {"from": "pattern", "fields": {"content": "x"}}}}`, `has no group`},
		{`{"read_file": {"result": "xml"}}`, `unknown source "xml"`},
		{`{"read_file": {"args": {"path": {"name": ""}}}}`, `argument "path" maps to an empty name`},
		{`[1]`, `a tool map is a JSON object`},
	} {
		if _, err := ParseToolMap([]byte(c.file)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to say %q", c.file, err, c.want)
		}
	}
}

// A profile skips what does not apply to it; certification runs it all.
func TestConfigProfile(t *testing.T) {
	cfg := NewConfig()
	cfg.Profile = "sessionless"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "explicit-ids") {
		t.Errorf("an unknown profile: %v", err)
	}
	byID := map[string]Spec{}
	for _, s := range Specs() {
		byID[s.ID] = s
	}
	cfg.Profile = ProfileExplicitIDs
	if cfg.notApplicable(byID["default.create-sets-default"]) == "" || cfg.notApplicable(byID["exec.run-command-streams"]) != "" {
		t.Error("explicit-ids: the default specs, and only those, are not applicable")
	}
	cfg.Profile = ProfileOneShot
	if cfg.notApplicable(byID["files.read-round-trip"]) == "" {
		t.Error("one-shot: a spec of other tools is not applicable")
	}
	cfg.RequireAll = true
	if cfg.notApplicable(byID["default.create-sets-default"]) != "" {
		t.Error("--require-all is the full contract")
	}
}

// A baseline names spec or rule IDs with reasons; the run passes when
// exactly those fail.
func TestConfigExpectedFailures(t *testing.T) {
	list, err := ParseExpectedFailures([]byte("errors.hang: the server has no deadline\nTOOLS-3: text results\n"))
	if err != nil || len(list) != 2 {
		t.Fatalf("%v %v", list, err)
	}
	for _, c := range []struct{ file, want string }{
		{"no.such-spec: x\n", `"no.such-spec" is neither a spec ID`},
		{"errors.hang: ''\n", `"errors.hang" has no reason`},
		{"- errors.hang\n", "want a mapping"},
		{"errors.hang: [a]\n", "the reason must be a string"},
	} {
		if _, err := ParseExpectedFailures([]byte(c.file)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want it to say %q", c.file, err, c.want)
		}
	}
	spec := func(id string, state types.SpecState) types.SpecReport {
		return types.SpecReport{LeafNodeType: types.NodeTypeIt, State: state,
			ContainerHierarchyLabels: [][]string{{string(FamilyErrors)}}, LeafNodeLabels: []string{id, "ERR-1"}}
	}
	rep := ginkgo.Report{SpecReports: []types.SpecReport{spec("errors.hang", types.SpecStateFailed), spec("errors.drip", types.SpecStatePassed)}}
	cfg := NewConfig()
	if WriteOutcome(io.Discard, rep, cfg) {
		t.Error("without a baseline a failure fails the run")
	}
	cfg.ExpectedFailures = []ExpectedFailure{{ID: "errors.hang", Reason: "r"}}
	if !WriteOutcome(io.Discard, rep, cfg) {
		t.Error("exactly the expected failure: the run passes")
	}
	var out strings.Builder
	cfg.ExpectedFailures = append(cfg.ExpectedFailures, ExpectedFailure{ID: "errors.drip", Reason: "r"})
	if WriteOutcome(&out, rep, cfg) || !strings.Contains(out.String(), "NOW PASSES errors.drip") {
		t.Errorf("an expected failure that passes is named and fails the run:\n%s", out.String())
	}
}
