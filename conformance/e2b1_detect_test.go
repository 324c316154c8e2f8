package conformance

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFindE2BSDK finds the e2b a server command would load: Node's from the
// script's folder upwards (the code interpreter's nested copy first), a
// virtual environment's from its bin folder or a .venv beside the command;
// and nothing where there is none.
func TestFindE2BSDK(t *testing.T) {
	root := t.TempDir()
	write := func(rel, text string) string {
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	script := write("node-srv/dist/index.js", "")
	write("node-srv/node_modules/e2b/package.json", `{"name":"e2b","version":"2.8.0"}`)
	nested := write("node-srv/node_modules/@e2b/code-interpreter/node_modules/e2b/package.json", `{"name":"e2b","version":"1.13.2"}`)
	python := write("py-srv/.venv/bin/python", "")
	dist := filepath.Join(root, "py-srv/.venv/lib/python3.11/site-packages/e2b-1.5.4.dist-info")
	write("py-srv/.venv/lib/python3.11/site-packages/e2b-1.5.4.dist-info/METADATA", "")
	write("py-srv/.venv/lib/python3.11/site-packages/e2b_code_interpreter-1.5.0.dist-info/METADATA", "")
	write("none/server.js", "")

	for _, c := range []struct {
		name    string
		command []string
		cwd     string
		want    foundSDK
		found   bool
	}{
		{"node script, nested copy first", []string{"node", "dist/index.js"}, filepath.Join(root, "node-srv"), foundSDK{"1.13.2", nested}, true},
		{"node script by absolute path", []string{"node", script}, root, foundSDK{"1.13.2", nested}, true},
		{"venv python", []string{python, "-m", "e2b_mcp_server"}, root, foundSDK{"1.5.4", dist}, true},
		{".venv beside the command", []string{"python3", "-m", "srv"}, filepath.Join(root, "py-srv"), foundSDK{"1.5.4", dist}, true},
		{"none", []string{"node", "server.js"}, filepath.Join(root, "none"), foundSDK{}, false},
	} {
		got, ok := findE2BSDK(c.command, c.cwd)
		if ok != c.found || got != c.want {
			t.Errorf("%s: got %+v %v, want %+v %v", c.name, got, ok, c.want, c.found)
		}
	}
}
