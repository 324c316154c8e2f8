// Command gen writes what is generated from the contract's tool table
// (see package toolset): internal/toolset/tools_gen.go, compat/tools.json
// and the README's tool table. go generate runs it in internal/toolset.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sandboxkit/sandboxkit/internal/toolset/toolgen"
)

func main() {
	if err := generate(filepath.Join("..", "..")); err != nil {
		fmt.Fprintln(os.Stderr, "toolset generate:", err)
		os.Exit(1)
	}
}

// generate rewrites the generated files under the repository root.
func generate(root string) error {
	contract, err := os.ReadFile(filepath.Join(root, toolgen.ContractPath))
	if err != nil {
		return err
	}
	tools, err := toolgen.Parse(string(contract))
	if err != nil {
		return err
	}
	src, err := toolgen.GoSource(tools)
	if err != nil {
		return err
	}
	js, err := toolgen.JSON(tools)
	if err != nil {
		return err
	}
	readme, err := os.ReadFile(filepath.Join(root, toolgen.READMEPath))
	if err != nil {
		return err
	}
	spliced, err := toolgen.SpliceREADME(string(readme), tools)
	if err != nil {
		return err
	}
	for path, data := range map[string][]byte{toolgen.GoPath: src, toolgen.JSONPath: js, toolgen.READMEPath: []byte(spliced)} {
		if err := os.WriteFile(filepath.Join(root, path), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
