package fakecodeinterp

import (
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"
	"github.com/dop251/goja/token"
)

// topLevelLetToVar lets a context re-run a cell that declares a top-level
// let or const (a notebook habit): it rewrites those keywords into var,
// padded to the same length so positions in errors stay true. Only
// top-level declarations change; block scoping inside functions and blocks
// is untouched. Top-level const bindings therefore become reassignable.
// Code that does not parse is returned unchanged (the run reports the
// syntax error).
func topLevelLetToVar(code string) string {
	prog, err := parser.ParseFile(nil, "<cell>", code, 0)
	if err != nil {
		return code
	}
	src := []byte(code)
	for _, st := range prog.Body {
		decl, ok := st.(*ast.LexicalDeclaration)
		if !ok {
			continue
		}
		at := int(decl.Idx) - 1
		kw := "let"
		if decl.Token == token.CONST {
			kw = "const"
		}
		if at < 0 || at+len(kw) > len(src) || string(src[at:at+len(kw)]) != kw {
			continue
		}
		copy(src[at:], "var"+"  "[:len(kw)-3])
	}
	return string(src)
}
