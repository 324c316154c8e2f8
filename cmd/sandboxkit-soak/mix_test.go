package main

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/sandboxkit/sandboxkit/sandbox"
	"github.com/sandboxkit/sandboxkit/server"
)

// TestCallMix: the one table of calls names every tool of the server once
// (plus the invalid call), and each valid call's arguments satisfy the
// tool's advertised input schema while the invalid one does not.
func TestCallMix(t *testing.T) {
	schemas := map[string]*jsonschema.Resolved{}
	for _, tool := range server.AllTools(nil) {
		s, ok := tool.Def.InputSchema.(*jsonschema.Schema)
		if !ok {
			t.Fatalf("%s: input schema is %T", tool.Name(), tool.Def.InputSchema)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: %v", tool.Name(), err)
		}
		schemas[tool.Name()] = rs
	}
	seen := map[string]int{}
	r := rand.New(rand.NewPCG(1, 1))
	s := &sessionState{provider: "other", commands: []string{"bg-0123456789abcdef"}}
	for _, c := range callMix {
		rs, ok := schemas[c.name]
		if !ok {
			t.Errorf("call %s names no tool of the server", c.name)
			continue
		}
		if c.weight <= 0 {
			t.Errorf("call %s has weight %d", c.name, c.weight)
		}
		e := callEnv{s: s, r: r, file: "soak/f0.txt", provider: map[string]any{"provider": "other"}}
		raw, err := json.Marshal(c.args(e))
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		err = rs.Validate(v)
		switch {
		case c.invalid && err == nil:
			t.Errorf("invalid call %s %s passes the schema", c.name, raw)
		case !c.invalid && err != nil:
			t.Errorf("call %s %s fails the schema: %v", c.name, raw, err)
		}
		if !c.invalid {
			seen[c.name]++
		}
	}
	for name := range schemas {
		if seen[name] != 1 {
			t.Errorf("tool %s appears %d times in the call mix, want once", name, seen[name])
		}
	}
	if sandbox.DefaultProviderID == "other" {
		t.Fatal("test provider collides with the default")
	}
}
