package server

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/internal/toolset"
)

var update = flag.Bool("update", false, "rewrite testdata/tools/*.json from the current tool definitions")

// canonicalJSON re-encodes v with sorted keys and indentation.
func canonicalJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var generic any
	if err := json.Unmarshal(data, &generic); err != nil {
		t.Fatal(err)
	}
	out, err := json.MarshalIndent(generic, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// TestToolSnapshots pins every tool's definition (name, description,
// schemas, annotations) to testdata/tools/<name>.json; a change without its
// snapshot fails. Run with -update to rewrite them.
func TestToolSnapshots(t *testing.T) {
	dir := filepath.Join("testdata", "tools")
	tools := AllTools(&Deps{})
	seen := map[string]bool{}
	for _, tool := range tools {
		name := tool.Name()
		seen[name+".json"] = true
		t.Run(name, func(t *testing.T) {
			got := canonicalJSON(t, tool.Def)
			path := filepath.Join(dir, name+".json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("no snapshot for %s (run go test ./server -run TestToolSnapshots -update): %v", name, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("tool %s differs from %s; if the change is intended, run with -update.\n--- got\n%s", name, path, got)
			}
		})
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, f := range files {
		if !seen[filepath.Base(f)] {
			if *update {
				_ = os.Remove(f)
				continue
			}
			t.Errorf("snapshot %s has no tool", f)
		}
	}
}

// listedTools returns tools/list as a client sees it, as generic JSON.
func listedTools(t *testing.T) []map[string]any {
	t.Helper()
	h := newHarness(t, nil)
	c := h.connect()
	res, err := c.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, tool := range res.Tools {
		var m map[string]any
		data, _ := json.Marshal(tool)
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// TestToolsList checks TOOLS-1 on the wire: exactly the contract's names,
// descriptions, closed input schemas, output schemas, and every annotation
// written out and truthful.
func TestToolsList(t *testing.T) {
	tools := listedTools(t)
	var names []string
	for _, tool := range tools {
		name := tool["name"].(string)
		names = append(names, name)
		t.Run(name, func(t *testing.T) {
			if d, _ := tool["description"].(string); strings.TrimSpace(d) == "" {
				t.Error("empty description")
			}
			in, _ := tool["inputSchema"].(map[string]any)
			if in["type"] != "object" || in["additionalProperties"] != false {
				t.Errorf("inputSchema must be a closed object: %v", in)
			}
			out, _ := tool["outputSchema"].(map[string]any)
			if out["type"] != "object" || out["additionalProperties"] != false {
				t.Errorf("outputSchema must be a closed object: %v", out)
			}
			ann, _ := tool["annotations"].(map[string]any)
			for _, hint := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
				if _, ok := ann[hint].(bool); !ok {
					t.Errorf("annotation %s not written out: %v", hint, ann)
				}
			}
			// The contract's tool table is the truth (TOOLS-1).
			row, _ := toolset.Lookup(name)
			for hint, want := range map[string]bool{"readOnlyHint": row.ReadOnly, "destructiveHint": row.Destructive,
				"idempotentHint": row.Idempotent, "openWorldHint": row.OpenWorld} {
				if got := ann[hint]; got != want {
					t.Errorf("%s = %v, want %v (the contract's tool table)", hint, got, want)
				}
			}
			data, _ := json.Marshal(tool)
			if strings.Contains(string(data), `"$ref"`) {
				t.Error("schemas must not use $ref")
			}
			props, _ := in["properties"].(map[string]any)
			for pname, p := range props {
				pm := p.(map[string]any)
				if d, _ := pm["description"].(string); d == "" {
					t.Errorf("property %s has no description", pname)
				}
				if pname == "sandbox_id" && pm["minLength"] != float64(1) {
					t.Errorf("sandbox_id must reject \"\" (VAL-3): %v", pm)
				}
			}
		})
	}
	want := toolset.Names()
	sort.Strings(want)
	sort.Strings(names)
	if !slices.Equal(names, want) {
		t.Errorf("tools/list names = %v, want %v", names, want)
	}
}

// TestAllTools checks the single list itself: unique names, and the same
// definitions as registered.
func TestAllTools(t *testing.T) {
	tools := AllTools(&Deps{})
	seen := map[string]bool{}
	for _, tool := range tools {
		if seen[tool.Name()] {
			t.Errorf("duplicate tool %q", tool.Name())
		}
		seen[tool.Name()] = true
		if tool.Def.Annotations == nil {
			t.Errorf("%s: annotations missing", tool.Name())
		}
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name())
	}
	if want := toolset.Names(); !slices.Equal(names, want) {
		t.Errorf("AllTools lists %v;\nthe contract's tool table has, in order, %v", names, want)
	}
}

// TestProtocolVersions checks TOOLS-4: initialize negotiates only versions
// with sessions, and a client offering a newer one there falls back.
func TestProtocolVersions(t *testing.T) {
	if got, want := ProtocolVersions(), []string{"2025-11-25", "2025-06-18", "2025-03-26"}; !slices.Equal(got, want) {
		t.Fatalf("ProtocolVersions = %v, want %v", got, want)
	}
	for _, offered := range []string{ModernProtocolVersion, "2099-01-01"} {
		h := newHarness(t, nil)
		st, ct := mcp.NewInMemoryTransports()
		ss, err := h.srv.mcp.Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := ct.Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		id, _ := jsonrpc.MakeID(float64(1))
		params, _ := json.Marshal(map[string]any{"protocolVersion": offered, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "0"}})
		if err := conn.Write(context.Background(), &jsonrpc.Request{ID: id, Method: "initialize", Params: params}); err != nil {
			t.Fatal(err)
		}
		msg, err := conn.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		resp, _ := msg.(*jsonrpc.Response)
		var res struct{ ProtocolVersion string }
		if resp == nil || json.Unmarshal(resp.Result, &res) != nil || !slices.Contains(ProtocolVersions(), res.ProtocolVersion) {
			t.Errorf("initialize offering %s: %+v, want one of %v", offered, msg, ProtocolVersions())
		}
		_ = conn.Close()
		_ = ss.Close()
	}
	for _, offered := range []string{"2025-11-25", "2025-06-18", "2025-03-26"} {
		t.Run("offer "+offered, func(t *testing.T) {
			h := newHarness(t, nil)
			st, ct := mcp.NewInMemoryTransports()
			ss, err := h.srv.mcp.Connect(context.Background(), st, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close()
			cl := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil)
			cs, err := cl.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: offered})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			got := cs.InitializeResult().ProtocolVersion
			if !slices.Contains(ProtocolVersions(), got) {
				t.Errorf("negotiated %q, want one of %v", got, ProtocolVersions())
			}
			if offered != "" && got != offered {
				t.Errorf("negotiated %q, want the offered %q", got, offered)
			}
		})
	}
}

// The schemas tools/list serves are the tools' definitions, though the
// server hands the SDK each input schema marshalled once (wireDef).
func TestToolsListServesTheDefinitions(t *testing.T) {
	h := newHarness(t, nil)
	res, err := h.connect().cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		served[tool.Name] = tool
	}
	for _, tool := range AllTools(&Deps{}) {
		got, ok := served[tool.Name()]
		if !ok {
			t.Errorf("tools/list lacks %s", tool.Name())
			continue
		}
		if a, b := asJSONValue(t, got.InputSchema), asJSONValue(t, tool.Def.InputSchema); !reflect.DeepEqual(a, b) {
			t.Errorf("%s: tools/list serves input schema %v, the definition is %v", tool.Name(), a, b)
		}
	}
}

// asJSONValue is v marshalled and read back as plain JSON values.
func asJSONValue(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
