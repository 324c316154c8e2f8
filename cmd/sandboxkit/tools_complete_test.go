package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxkit/sandboxkit/conformance"
	"github.com/sandboxkit/sandboxkit/internal/toolset"
	"github.com/sandboxkit/sandboxkit/server"
)

// TestEveryContractToolIsWiredUp walks the README's "Adding a tool" for
// every tool of the contract's tool table and fails at the first step
// that is missing, naming it. (The generated files, the README's table
// among them, are checked by internal/toolset's TestGeneratedFilesAreCurrent;
// the schema snapshots' content by server's TestToolSnapshots.)
func TestEveryContractToolIsWiredUp(t *testing.T) {
	registered := map[string]bool{}
	for _, tool := range server.AllTools(nil) {
		registered[tool.Name()] = true
	}
	covered := map[string][]string{}
	for _, s := range conformance.Specs() {
		for _, name := range s.Tools {
			covered[name] = append(covered[name], s.ID)
		}
	}
	rules := map[string][]string{}
	for _, r := range conformance.Rules() {
		if !strings.HasPrefix(r.Section, "1. ") {
			for _, name := range toolset.Names() {
				if named := regexp.MustCompile(`\b` + name + `\b`); named.MatchString(r.Text) || named.MatchString(r.Section) {
					rules[name] = append(rules[name], r.ID)
				}
			}
		}
	}
	readme := readREADME(t)
	peer := readRepoFile(t, "compat/peer/tools.mjs")
	for _, tool := range toolset.All() {
		name := tool.Name
		steps := []struct {
			ok   bool
			step string
		}{
			{len(rules[name]) > 0, "1. rules in conformance/contract/tools.md that name it (outside section 1)"},
			{registered[name], "3. a constructor in server/ listed in server.AllTools"},
			{fileExists(t, filepath.Join("server", "testdata", "tools", name+".json")), "4. its schema snapshot, server/testdata/tools/" + name + ".json (go test ./server -run TestToolSnapshots -update)"},
			{len(covered[name]) > 0, "5. kit specs whose Tools name it (conformance/specs_<family>.go)"},
			{strings.Contains(readme, "| `"+name+"` |"), "2. its row in the README's tool table (go generate ./internal/toolset)"},
			{strings.Contains(peer, "register(server, '"+name+"'"), "6. the TypeScript peer's registration (compat/peer/tools.mjs)"},
		}
		for _, s := range steps {
			if !s.ok {
				t.Errorf("tool %s: a step of the README's \"Adding a tool\" is missing: %s", name, s.step)
			}
		}
	}
	for name := range registered {
		if !slices.Contains(toolset.Names(), name) {
			t.Errorf("the server registers %s, which the contract's tool table lacks", name)
		}
	}
}

func readRepoFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func fileExists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(repoRoot, path))
	return err == nil
}
