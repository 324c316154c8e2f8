package conformance

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

const alternativeEnv = "SANDBOXKIT_CORRECT_ALTERNATIVE"

// correctAlternative is the reference server changed in a way the
// contract allows, and the specs that must still pass against it: each
// was a false failure (the spec asked more than its rules say).
type correctAlternative struct {
	name   string
	design string
	specs  []string
	make   func() *breakage
}

func correctAlternatives() []correctAlternative {
	return []correctAlternative{
		{"create-without-resources", "create_sandbox defines no cpu and memory and refuses them as undefined arguments (VAL-4)",
			[]string{"errors.create-rejected", "bounds.create-sandbox"}, createWithoutResources},
	}
}

// TestKitPassesCorrectAlternatives runs the named specs against each
// correct alternative in a child process: they must pass.
func TestKitPassesCorrectAlternatives(t *testing.T) {
	if os.Getenv(alternativeEnv) != "" || os.Getenv(variantEnv) != "" || os.Getenv(fixtureEnv) != "" {
		t.Skip("inside a child run")
	}
	for _, a := range correctAlternatives() {
		t.Run(a.name, func(t *testing.T) {
			if r := runChild(t, "TestCorrectAlternativeChild", alternativeEnv+"="+a.name); r.err != nil {
				t.Errorf("a server that %s fails %s: %s", a.design, strings.Join(a.specs, ", "), r.explain())
			}
		})
	}
}

// TestCorrectAlternativeChild is one run of TestKitPassesCorrectAlternatives.
func TestCorrectAlternativeChild(t *testing.T) {
	name := os.Getenv(alternativeEnv)
	if name == "" {
		t.Skip("run by TestKitPassesCorrectAlternatives")
	}
	for _, a := range correctAlternatives() {
		if a.name == name {
			runKit(t, NewConfig(), childOptions(&RunOptions{LabelFilter: strings.Join(a.specs, " || ")}), testSeams{breakage: a.make()})
			return
		}
	}
	t.Fatalf("unknown alternative %q", name)
}

// dropInputProps removes properties from a tool's advertised input schema
// in a tools/list result (a copy: the server's tools stay as they are).
func dropInputProps(res mcp.Result, tool string, props ...string) mcp.Result {
	lr, ok := res.(*mcp.ListToolsResult)
	if !ok {
		return res
	}
	out := &mcp.ListToolsResult{NextCursor: lr.NextCursor}
	for _, t := range lr.Tools {
		if t.Name == tool {
			c := *t
			var sch map[string]any
			data, _ := json.Marshal(t.InputSchema)
			_ = json.Unmarshal(data, &sch)
			if p, ok := sch["properties"].(map[string]any); ok {
				for _, name := range props {
					delete(p, name)
				}
			}
			c.InputSchema = sch
			t = &c
		}
		out.Tools = append(out.Tools, t)
	}
	return out
}

// invalidArgument is the tool error naming field, as the reference server
// words it.
func invalidArgument(field string) *mcp.CallToolResult {
	data, _ := json.Marshal(map[string]any{"error": map[string]any{
		"category": "invalid_argument", "field": field, "recovery": sandbox.InvalidArgument.Recovery(),
	}})
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(data)}}}
}

var createWithoutResources = middlewareOnly(func(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if name, args, ok := toolCall(method, req); ok && name == "create_sandbox" {
			for _, f := range []string{"cpu", "memory"} {
				if _, has := args[f]; has {
					return invalidArgument(f), nil
				}
			}
		}
		res, err := next(ctx, method, req)
		if method == "tools/list" && err == nil {
			res = dropInputProps(res, "create_sandbox", "cpu", "memory")
		}
		return res, err
	}
})
