package fakecodeinterp

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// pyFileOptions turns on the Starlark features that bring it closest to
// Python: while loops, top-level if/for/while, reassigned globals, sets
// and recursion.
func pyFileOptions() *syntax.FileOptions {
	return &syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true, Recursion: true}
}

// pyCellName is the file name in tracebacks, as IPython names a cell's
// code.
const pyCellName = "<cell>"

// localExec is the thread-local key of the running execution.
const localExec = "sandboxkit.exec"

// pyExec is what the builtins of one running execution need.
type pyExec struct {
	ctx context.Context
	out kernelOutput
}

// pythonKernel runs Python as Starlark (see the package documentation for
// the subset). Globals persist across executions.
type pythonKernel struct {
	globals starlark.StringDict
	environ *starlark.Dict
	cwd     string
	argv    []string // sys.argv
	fs      FS       // for open(); nil: open() raises OSError
}

func newPythonKernel(cwd string, env map[string]string) *pythonKernel {
	return newPythonProgram(cwd, env, []string{""})
}

// newPythonProgram is a kernel for one program run with sys.argv argv.
func newPythonProgram(cwd string, env map[string]string, argv []string) *pythonKernel {
	k := &pythonKernel{environ: starlark.NewDict(len(env)), cwd: cwd, argv: argv}
	for key, v := range env {
		_ = k.environ.SetKey(starlark.String(key), starlark.String(v))
	}
	k.globals = pyBuiltins(k)
	return k
}

func (k *pythonKernel) setenv(key, value string) {
	_ = k.environ.SetKey(starlark.String(key), starlark.String(value))
}

func (k *pythonKernel) unsetenv(key string) {
	_, _, _ = k.environ.Delete(starlark.String(key))
}

func (k *pythonKernel) exec(ctx context.Context, code string, out kernelOutput) (*Result, *ExecError) {
	src, xerr := translatePython(code)
	if xerr != nil {
		return nil, xerr
	}
	opts := pyFileOptions()
	f, err := opts.Parse(pyCellName, src, 0)
	if err != nil {
		return nil, pySyntaxError(code, err)
	}
	var last syntax.Expr
	if n := len(f.Stmts); n > 0 {
		if es, ok := f.Stmts[n-1].(*syntax.ExprStmt); ok {
			last, f.Stmts = es.X, f.Stmts[:n-1]
		}
	}
	thread := &starlark.Thread{Name: "python"}
	thread.SetLocal(localExec, &pyExec{ctx: ctx, out: out})
	stop := context.AfterFunc(ctx, func() { thread.Cancel("KeyboardInterrupt") })
	defer stop()
	if err := starlark.ExecREPLChunk(f, thread, k.globals); err != nil {
		return nil, pyError(ctx, err)
	}
	if last == nil {
		return nil, nil
	}
	v, err := starlark.EvalExprOptions(opts, thread, last, k.globals)
	if err != nil {
		return nil, pyError(ctx, err)
	}
	return pyResult(v), nil
}

// pyResult is the execute_result of a cell whose last expression is v:
// none for None, the PNG of an Image, else the repr, without the quotes
// the server strips from a string's repr (template/server/api/models/
// result.py Result.__init__).
func pyResult(v starlark.Value) *Result {
	if v == starlark.None {
		return nil
	}
	if img, ok := v.(*pyImage); ok {
		return &Result{PNG: img.png, Text: img.String()}
	}
	text := pyRepr(v)
	if len(text) >= 2 && (text[0] == '\'' || text[0] == '"') && text[len(text)-1] == text[0] {
		text = text[1 : len(text)-1]
	}
	return &Result{Text: text}
}

// importRE and friends recognise the statements Starlark lacks and that
// translatePython rewrites line by line, keeping line numbers.
var (
	importRE     = regexp.MustCompile(`^(\s*)import\s+(.+?)\s*$`)
	fromImportRE = regexp.MustCompile(`^(\s*)from\s+([\w.]+)\s+import\s+(.+?)\s*$`)
	raiseRE      = regexp.MustCompile(`^(\s*)raise\s+(\w+)\s*(?:\((.*)\))?(?:\s+from\s+\w+)?\s*$`)
	bareRaiseRE  = regexp.MustCompile(`^(\s*)raise\s*$`)
	asRE         = regexp.MustCompile(`^([\w.]+)(?:\s+as\s+(\w+))?$`)
	withRE       = regexp.MustCompile(`^(\s*)with\s+(.+?)(?:\s+as\s+(\w+))?\s*:\s*$`)
	tryRE        = regexp.MustCompile(`^(\s*)(?:try|finally)\s*:\s*$`)
	exceptRE     = regexp.MustCompile(`^(\s*)except\b(.*?)(?:\s+as\s+(\w+))?\s*:\s*$`)
)

// blockRewrites turn the compound statements Starlark lacks into ones it
// has, keeping the block under them: "with E as n:" runs the block once
// with n bound ("for n in [E]:"); "try:" and "finally:" run their blocks
// ("if True:"); an "except" block never runs ("if False:", or
// "for n in []:" so that n stays a bound name). So a try body that raises
// is not caught: the exception ends the cell, as documented.
func blockRewrite(line string) (string, bool) {
	if m := withRE.FindStringSubmatch(line); m != nil && !strings.Contains(m[2], " as ") {
		name := m[3]
		if name == "" {
			name = "_"
		}
		return fmt.Sprintf("%sfor %s in [%s]:", m[1], name, m[2]), true
	}
	if m := tryRE.FindStringSubmatch(line); m != nil {
		return m[1] + "if True:", true
	}
	if m := exceptRE.FindStringSubmatch(line); m != nil {
		if m[3] != "" {
			return fmt.Sprintf("%sfor %s in []:", m[1], m[3]), true
		}
		return m[1] + "if False:", true
	}
	if m := bareRaiseRE.FindStringSubmatch(line); m != nil {
		return m[1] + `__raise__("RuntimeError", "No active exception to reraise")`, true
	}
	return "", false
}

// translatePython rewrites import and raise statements, which Starlark
// does not have, into calls of the kernel's __import__, __import_from__
// and __raise__ builtins. Everything else is left to Starlark's parser.
func translatePython(code string) (string, *ExecError) {
	lines := strings.Split(translateFStrings(code), "\n")
	for i, line := range lines {
		var (
			out string
			err *ExecError
		)
		switch {
		case fromImportRE.MatchString(line):
			m := fromImportRE.FindStringSubmatch(line)
			out, err = translateFromImport(m[1], m[2], m[3])
		case importRE.MatchString(line):
			m := importRE.FindStringSubmatch(line)
			out, err = translateImport(m[1], m[2])
		case withRE.MatchString(line) || tryRE.MatchString(line) || exceptRE.MatchString(line) || bareRaiseRE.MatchString(line):
			var ok bool
			if out, ok = blockRewrite(line); !ok {
				continue
			}
		case raiseRE.MatchString(line):
			m := raiseRE.FindStringSubmatch(line)
			args := ""
			if strings.TrimSpace(m[3]) != "" {
				args = ", " + m[3]
			}
			out = fmt.Sprintf("%s__raise__(%q%s)", m[1], m[2], args)
		default:
			continue
		}
		if err != nil {
			return "", err
		}
		lines[i] = out
	}
	return strings.Join(lines, "\n"), nil
}

func translateImport(indent, list string) (string, *ExecError) {
	var stmts []string
	for _, part := range strings.Split(list, ",") {
		m := asRE.FindStringSubmatch(strings.TrimSpace(part))
		if m == nil {
			return "", notImplemented("this form of import")
		}
		name, bind := m[1], m[2]
		if bind == "" {
			// "import os.path" binds os, as in Python.
			bind, _, _ = strings.Cut(name, ".")
			name = bind
		}
		stmts = append(stmts, fmt.Sprintf("%s = __import__(%q)", bind, name))
	}
	return indent + strings.Join(stmts, "; "), nil
}

func translateFromImport(indent, module, list string) (string, *ExecError) {
	list = strings.Trim(list, "() ")
	if list == "*" {
		return "", notImplemented("from ... import *")
	}
	var stmts []string
	for _, part := range strings.Split(list, ",") {
		m := asRE.FindStringSubmatch(strings.TrimSpace(part))
		if m == nil || strings.Contains(m[1], ".") {
			return "", notImplemented("this form of import")
		}
		bind := m[2]
		if bind == "" {
			bind = m[1]
		}
		stmts = append(stmts, fmt.Sprintf("%s = __import_from__(%q, %q)", bind, module, m[1]))
	}
	return indent + strings.Join(stmts, "; "), nil
}

// unsupportedKeywords are Python statements outside the subset: a cell
// that uses one gets NotImplementedError naming it instead of Starlark's
// bare syntax error.
var unsupportedKeywords = []string{"try", "except", "finally", "class", "with", "async", "await", "yield", "global", "nonlocal", "del", "assert"}

func notImplemented(what string) *ExecError {
	v := fmt.Sprintf("%s is outside the Python subset of sandboxkit's fake code interpreter (Starlark: see the fakecodeinterp package documentation)", what)
	return &ExecError{Name: "NotImplementedError", Value: v, Traceback: pyTraceback(nil, "NotImplementedError", v)}
}

// pySyntaxError turns a Starlark parse error into SyntaxError, or into
// NotImplementedError when the failing line starts with a Python keyword
// Starlark lacks.
func pySyntaxError(code string, err error) *ExecError {
	var se syntax.Error
	if errors.As(err, &se) {
		lines := strings.Split(code, "\n")
		if l := int(se.Pos.Line); l >= 1 && l <= len(lines) {
			fields := strings.FieldsFunc(lines[l-1], func(r rune) bool { return r == ' ' || r == '\t' || r == ':' || r == '(' })
			if len(fields) > 0 {
				for _, kw := range unsupportedKeywords {
					if fields[0] == kw {
						return notImplemented(fmt.Sprintf("the %q statement", kw))
					}
				}
			}
			if strings.Contains(lines[l-1], "f\"\"\"") || strings.Contains(lines[l-1], "f'''") || strings.Contains(lines[l-1], "=}") {
				return notImplemented("a triple-quoted f-string or an f-string with {x=}")
			}
		}
		v := fmt.Sprintf("%s (%s, line %d)", se.Msg, pyCellName, se.Pos.Line)
		return &ExecError{Name: "SyntaxError", Value: v, Traceback: "SyntaxError: " + v}
	}
	return &ExecError{Name: "SyntaxError", Value: err.Error(), Traceback: "SyntaxError: " + err.Error()}
}

// pyException is an error raised by a `raise` statement or by a builtin
// that knows its Python exception name.
type pyException struct{ name, value string }

func (e *pyException) Error() string { return e.name + ": " + e.value }

// pyExit is sys.exit(code).
type pyExit struct{ code int }

func (e *pyExit) Error() string { return fmt.Sprintf("SystemExit: %d", e.code) }

// pyErrorNames maps Starlark's runtime messages to the Python exception
// a CPython program would have raised.
var pyErrorNames = []struct{ substr, name, value string }{
	{"division by zero", "ZeroDivisionError", "division by zero"},
	{"modulo by zero", "ZeroDivisionError", "integer modulo by zero"},
	{"not in dict", "KeyError", ""},
	{"out of range", "IndexError", ""},
	{"has no .", "AttributeError", ""},
	{"invalid literal", "ValueError", ""},
	{"unknown binary op", "TypeError", ""},
	{"unsupported", "TypeError", ""},
	{"not callable", "TypeError", ""},
	{"got ", "TypeError", ""},
	{"missing argument", "TypeError", ""},
	{"undefined: ", "NameError", ""},
	{"cancelled", "KeyboardInterrupt", " "},
}

// pyError converts an execution error to the Python-style error the SDK
// shows: the exception name, its message and a traceback of the cell's
// frames.
func pyError(ctx context.Context, err error) *ExecError {
	var exit *pyExit
	if errors.As(err, &exit) {
		v := strconv.Itoa(exit.code)
		return &ExecError{Name: "SystemExit", Value: v, Traceback: "SystemExit: " + v}
	}
	var exc *pyException
	if errors.As(err, &exc) {
		return &ExecError{Name: exc.name, Value: exc.value, Traceback: pyTraceback(err, exc.name, exc.value)}
	}
	if ctx.Err() != nil {
		return &ExecError{Name: "KeyboardInterrupt", Value: "", Traceback: pyTraceback(err, "KeyboardInterrupt", "")}
	}
	msg := err.Error()
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		msg = ee.Msg
	}
	if strings.HasPrefix(msg, "undefined: ") || strings.Contains(msg, ": undefined: ") {
		_, name, _ := strings.Cut(msg, "undefined: ")
		v := fmt.Sprintf("name '%s' is not defined", name)
		return &ExecError{Name: "NameError", Value: v, Traceback: pyTraceback(err, "NameError", v)}
	}
	name, value := "RuntimeError", msg
	for _, m := range pyErrorNames {
		if strings.Contains(msg, m.substr) {
			name = m.name
			if m.value != "" {
				value = strings.TrimSpace(m.value)
			}
			break
		}
	}
	return &ExecError{Name: name, Value: value, Traceback: pyTraceback(err, name, value)}
}

// pyTraceback formats a traceback as CPython prints it, with the cell's
// frames from Starlark's call stack.
func pyTraceback(err error, name, value string) string {
	var b strings.Builder
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		b.WriteString("Traceback (most recent call last):\n")
		for _, fr := range ee.CallStack {
			if fr.Pos.Filename() != pyCellName {
				continue
			}
			fmt.Fprintf(&b, "  File \"%s\", line %d, in %s\n", pyCellName, fr.Pos.Line, pyFrameName(fr.Name))
		}
	}
	b.WriteString(name)
	if value != "" {
		b.WriteString(": " + value)
	}
	return b.String()
}

func pyFrameName(n string) string {
	if n == "<toplevel>" {
		return "<module>"
	}
	return n
}

// sleep waits d or until the execution is interrupted.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
