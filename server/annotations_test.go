package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// annotationKeys are the fields every tool's mcp.ToolAnnotations literal
// must name (TOOLS-1). ReadOnlyHint and IdempotentHint are plain bools whose
// zero value is a claim ("may write", "not idempotent"), so leaving one out
// would advertise a hint nobody chose; the test makes that a failure.
var annotationKeys = []string{"Title", "ReadOnlyHint", "DestructiveHint", "IdempotentHint", "OpenWorldHint"}

// TestAnnotationsSpelledOut reads the package's source: every
// mcp.ToolAnnotations literal is keyed and names each hint, and every tool
// of AllTools takes its annotations from one of them (matched by title).
// The model is github-mcp-server's keyed literal checked by its
// pkg/toolvalidation.
func TestAnnotationsSpelledOut(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	titles := map[string]int{}
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
			if bl, ok := keys["Title"].(*ast.BasicLit); ok && bl.Kind == token.STRING {
				titles[strings.Trim(bl.Value, "\"")]++
			} else {
				t.Errorf("%s: mcp.ToolAnnotations Title is not a string literal", pos)
			}
			return true
		})
	}
	tools := AllTools(&Deps{})
	if len(titles) != len(tools) {
		t.Errorf("%d distinct annotation literals for %d tools", len(titles), len(tools))
	}
	for _, tool := range tools {
		a := tool.Def.Annotations
		if a == nil || titles[a.Title] != 1 {
			t.Errorf("tool %s: annotations not taken from exactly one keyed literal", tool.Name())
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
