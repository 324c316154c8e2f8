package conformance

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestSpecBodiesAreNamedFunctions holds the spec files to one style: a
// family file's list holds Spec literals whose Body names a function of the
// package, never a function literal, and no function builds a single spec
// (func specXxx() Spec), so that a family file reads as its list and every
// body is found by its name.
func TestSpecBodiesAreNamedFunctions(t *testing.T) {
	files, err := filepath.Glob("specs_*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no spec files: %v", err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if res := n.Type.Results; res != nil && len(res.List) == 1 && n.Type.Params.NumFields() == 0 {
					if id, ok := res.List[0].Type.(*ast.Ident); ok && id.Name == "Spec" {
						t.Errorf("%s: func %s() Spec builds one spec: put its literal in the family's list and name its body", fset.Position(n.Pos()), n.Name.Name)
					}
				}
			case *ast.KeyValueExpr:
				if key, ok := n.Key.(*ast.Ident); ok && key.Name == "Body" {
					if _, lit := n.Value.(*ast.FuncLit); lit {
						t.Errorf("%s: a spec body written inline: make it a named function (func specXxx(ctx context.Context, tc *TestContext))", fset.Position(n.Pos()))
					}
				}
			}
			return true
		})
	}
}
