package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// annotationKeys are the fields every tool's mcp.ToolAnnotations literal
// must name (TOOLS-1). ReadOnlyHint and IdempotentHint are plain bools whose
// zero value is a claim ("may write", "not idempotent"), so leaving one out
// would advertise a hint nobody chose; the test makes that a failure.
var annotationKeys = []string{"Title", "ReadOnlyHint", "DestructiveHint", "IdempotentHint", "OpenWorldHint"}

// TestAnnotationsSpelledOut reads the package's source: the one
// mcp.ToolAnnotations literal (contractAnnotations, which fills it from the
// contract's tool table, whose parser requires every hint's column) is
// keyed and names each hint, and every tool of AllTools takes its
// annotations from it. The model is github-mcp-server's keyed literal
// checked by its pkg/toolvalidation.
func TestAnnotationsSpelledOut(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	literals := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok || !isToolAnnotations(lit.Type) {
				return true
			}
			pos := fset.Position(lit.Pos())
			literals++
			keys := map[string]ast.Expr{}
			for _, e := range lit.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					t.Errorf("%s: mcp.ToolAnnotations literal is positional", pos)
					return true
				}
				if id, ok := kv.Key.(*ast.Ident); ok {
					keys[id.Name] = kv.Value
				}
			}
			for _, k := range annotationKeys {
				if _, ok := keys[k]; !ok {
					t.Errorf("%s: mcp.ToolAnnotations literal leaves %s out: set it on purpose", pos, k)
				}
			}
			return true
		})
	}
	if literals != 1 {
		t.Errorf("%d mcp.ToolAnnotations literals: want the one of contractAnnotations, so that no tool spells its own", literals)
	}
	for _, tool := range AllTools(&Deps{}) {
		a := tool.Def.Annotations
		if a == nil || !reflect.DeepEqual(a, contractAnnotations(tool.Name())) {
			t.Errorf("tool %s: annotations not taken from the contract's tool table (contractAnnotations)", tool.Name())
			continue
		}
		if a.DestructiveHint == nil || a.OpenWorldHint == nil {
			t.Errorf("tool %s: destructive and open-world hints must be set, not left to the default", tool.Name())
		}
	}
}

// isToolAnnotations reports whether a literal's type is mcp.ToolAnnotations.
func isToolAnnotations(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == "mcp" && sel.Sel.Name == "ToolAnnotations"
}
