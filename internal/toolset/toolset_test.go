package toolset_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sandboxkit/sandboxkit/internal/toolset"
	"github.com/sandboxkit/sandboxkit/internal/toolset/toolgen"
)

// root is the repository's root, seen from this package.
const root = "../.."

func readRepo(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestGeneratedFilesAreCurrent fails when a file generated from the
// contract's tool table differs from what go generate would write now.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	tools, err := toolgen.Parse(string(readRepo(t, toolgen.ContractPath)))
	if err != nil {
		t.Fatal(err)
	}
	src, err := toolgen.GoSource(tools)
	if err != nil {
		t.Fatal(err)
	}
	js, err := toolgen.JSON(tools)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(readRepo(t, toolgen.READMEPath))
	spliced, err := toolgen.SpliceREADME(readme, tools)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string][]byte{toolgen.GoPath: src, toolgen.JSONPath: js, toolgen.READMEPath: []byte(spliced)} {
		if !bytes.Equal(readRepo(t, path), want) {
			t.Errorf("%s is stale: the contract's tool table changed; run go generate ./internal/toolset", path)
		}
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	if !slices.Equal(toolset.Names(), names) {
		t.Errorf("toolset.Names() = %v, want the table's %v", toolset.Names(), names)
	}
}

func TestLookup(t *testing.T) {
	if tool, ok := toolset.Lookup(toolset.GetSandbox); !ok || !tool.ReadOnly || tool.Destructive {
		t.Errorf("Lookup(get_sandbox) = %+v, %v", tool, ok)
	}
	if _, ok := toolset.Lookup("no_such_tool"); ok {
		t.Error("Lookup found a tool the contract lacks")
	}
}
