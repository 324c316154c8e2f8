package server

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var update = flag.Bool("update", false, "rewrite testdata/tools/*.json from the current tool definitions")

// contractTools is TOOLS-1's list.
var contractTools = []string{
	"create_sandbox", "kill_sandbox", "run_code", "run_command", "read_file", "write_file", "list_files",
	"list_sandboxes", "get_sandbox", "set_sandbox_timeout",
	"start_background_command", "get_background_command", "kill_background_command",
	"upload_file", "download_file",
}

// readOnlyTools and destructiveTools are the annotation truth table
// (TOOLS-1): read-only exactly for these; destructive for the kills, the
// tools that overwrite files, and the ones that run arbitrary code.
var (
	readOnlyTools    = []string{"list_sandboxes", "get_sandbox", "read_file", "list_files", "get_background_command", "download_file"}
	destructiveTools = []string{"kill_sandbox", "kill_background_command", "write_file", "upload_file", "run_command", "run_code", "start_background_command"}
)

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

// TestToolsList checks TOOLS-1 on the wire: exactly the fifteen names,
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
			if got, want := ann["readOnlyHint"], slices.Contains(readOnlyTools, name); got != want {
				t.Errorf("readOnlyHint = %v, want %v", got, want)
			}
			if got, want := ann["destructiveHint"], slices.Contains(destructiveTools, name); got != want {
				t.Errorf("destructiveHint = %v, want %v", got, want)
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
	want := slices.Clone(contractTools)
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
	if len(tools) != len(contractTools) {
		t.Errorf("AllTools has %d tools, want %d", len(tools), len(contractTools))
	}
	for _, name := range contractTools {
		if !seen[name] {
			t.Errorf("AllTools lacks %s", name)
		}
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
