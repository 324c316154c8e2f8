package fakecodeinterp

import (
	"encoding/base64"
	"fmt"
	"io"
	"math"
	"path"
	"strconv"
	"strings"
	"time"

	starjson "go.starlark.net/lib/json"
	starmath "go.starlark.net/lib/math"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
)

// pyVersion is what sys.version says: the fake is not CPython.
const pyVersion = "3.11.0 (sandboxkit fake code interpreter: Starlark dialect)"

// pyBuiltins returns a fresh kernel's globals: the Python builtins that
// Starlark lacks or that must write to the execution's streams, and the
// import hooks of translatePython.
func pyBuiltins(k *pythonKernel) starlark.StringDict {
	modules := pyModules(k)
	return starlark.StringDict{
		"print":   starlark.NewBuiltin("print", pyPrint),
		"display": starlark.NewBuiltin("display", pyDisplay),
		"sum":     starlark.NewBuiltin("sum", pySum),
		"open":    starlark.NewBuiltin("open", k.pyOpen),
		"map":     starlark.NewBuiltin("map", pyMap),
		"filter":  starlark.NewBuiltin("filter", pyFilter),
		"__str__": starlark.NewBuiltin("str", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var v starlark.Value
			if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &v); err != nil {
				return nil, err
			}
			return starlark.String(pyStr(v)), nil
		}),
		"repr": starlark.NewBuiltin("repr", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var v starlark.Value
			if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &v); err != nil {
				return nil, err
			}
			return starlark.String(pyRepr(v)), nil
		}),
		"format":          starlark.NewBuiltin("format", pyFormat),
		"__fmt__":         starlark.NewBuiltin("format", pyFormat),
		"round":           starlark.NewBuiltin("round", pyRound),
		"__raise__":       starlark.NewBuiltin("__raise__", pyRaise),
		"__import__":      starlark.NewBuiltin("__import__", pyImport(modules)),
		"__import_from__": starlark.NewBuiltin("__import_from__", pyImportFrom(modules)),
	}
}

// pyModules are the importable modules: a small, honest subset of the
// standard library (see the package documentation).
func pyModules(k *pythonKernel) map[string]starlark.Value {
	stdout := pyStream("stdout", func(o kernelOutput) io.Writer { return o.stdout })
	stderr := pyStream("stderr", func(o kernelOutput) io.Writer { return o.stderr })
	return map[string]starlark.Value{
		"os": &starlarkstruct.Module{Name: "os", Members: starlark.StringDict{
			"environ": k.environ,
			"getenv":  starlark.NewBuiltin("getenv", k.getenv),
			"getcwd": starlark.NewBuiltin("getcwd", func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
				return starlark.String(k.cwd), nil
			}),
			"sep": starlark.String("/"),
			"path": &starlarkstruct.Module{Name: "os.path", Members: starlark.StringDict{
				"join": starlark.NewBuiltin("join", pyPathJoin),
			}},
		}},
		"sys": &starlarkstruct.Module{Name: "sys", Members: starlark.StringDict{
			"stdout":   stdout,
			"stderr":   stderr,
			"version":  starlark.String(pyVersion),
			"platform": starlark.String("linux"),
			"argv":     pyStrings(k.argv),
			"exit":     starlark.NewBuiltin("exit", pySysExit),
		}},
		"math":   starmath.Module,
		"random": pyRandomModule(),
		"json": &starlarkstruct.Module{Name: "json", Members: starlark.StringDict{
			"dumps": starlark.NewBuiltin("dumps", pyJSONDumps),
			"loads": starjson.Module.Members["decode"],
		}},
		"time": &starlarkstruct.Module{Name: "time", Members: starlark.StringDict{
			"time":      starlark.NewBuiltin("time", pyTimeNow),
			"monotonic": starlark.NewBuiltin("monotonic", pyTimeNow),
			"sleep":     starlark.NewBuiltin("sleep", pySleep),
		}},
		"IPython.display": &starlarkstruct.Module{Name: "IPython.display", Members: starlark.StringDict{
			"display": starlark.NewBuiltin("display", pyDisplay),
			"Image":   starlark.NewBuiltin("Image", pyNewImage),
		}},
	}
}

func running(thread *starlark.Thread) *pyExec {
	e, _ := thread.Local(localExec).(*pyExec)
	return e
}

func pyImport(modules map[string]starlark.Value) func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
	return func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var name string
		if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &name); err != nil {
			return nil, err
		}
		if m, ok := modules[name]; ok {
			return m, nil
		}
		return nil, &pyException{"ModuleNotFoundError", fmt.Sprintf("No module named '%s' (sandboxkit's fake code interpreter provides only os, sys, math, json, random, time and IPython.display)", name)}
	}
}

func pyImportFrom(modules map[string]starlark.Value) func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
	imp := pyImport(modules)
	return func(t *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var module, name string
		if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 2, &module, &name); err != nil {
			return nil, err
		}
		if sub, ok := modules[module+"."+name]; ok {
			return sub, nil
		}
		m, err := imp(t, b, starlark.Tuple{starlark.String(module)}, nil)
		if err != nil {
			return nil, err
		}
		if v, err := m.(starlark.HasAttrs).Attr(name); err == nil && v != nil {
			return v, nil
		}
		return nil, &pyException{"ImportError", fmt.Sprintf("cannot import name '%s' from '%s'", name, module)}
	}
}

// pyRaise implements `raise Name(message)`.
func pyRaise(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	name := "Exception"
	if len(args) > 0 {
		if s, ok := starlark.AsString(args[0]); ok {
			name = s
		}
	}
	var parts []string
	for _, a := range args[min(1, len(args)):] {
		parts = append(parts, pyStr(a))
	}
	return nil, &pyException{name, strings.Join(parts, ", ")}
}

// pyPrint is Python's print(*args, sep=' ', end='\n', file=sys.stdout,
// flush=False).
func pyPrint(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	sep, end := " ", "\n"
	var file starlark.Value = starlark.None
	var flush bool
	if err := starlark.UnpackArgs(b.Name(), nil, kwargs, "sep?", &sep, "end?", &end, "file?", &file, "flush?", &flush); err != nil {
		return nil, err
	}
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = pyStr(a)
	}
	e := running(thread)
	w := e.out.stdout
	if s, ok := file.(*pyStreamValue); ok {
		w = s.writer(e.out)
	}
	_, err := io.WriteString(w, strings.Join(parts, sep)+end)
	return starlark.None, err
}

// pyDisplay is IPython's display(obj): a result that is not the cell's
// main result.
func pyDisplay(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	e := running(thread)
	for _, a := range args {
		if r := pyResult(a); r != nil {
			e.out.display(*r)
		}
	}
	return starlark.None, nil
}

func pySum(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var iterable starlark.Iterable
	var start starlark.Value = starlark.MakeInt(0)
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "iterable", &iterable, "start?", &start); err != nil {
		return nil, err
	}
	it := iterable.Iterate()
	defer it.Done()
	acc := start
	var x starlark.Value
	for it.Next(&x) {
		v, err := starlark.Binary(syntax.PLUS, acc, x)
		if err != nil {
			return nil, err
		}
		acc = v
	}
	return acc, nil
}

func pyRound(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var x starlark.Value
	var nd starlark.Value = starlark.None
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "number", &x, "ndigits?", &nd); err != nil {
		return nil, err
	}
	f, ok := starlark.AsFloat(x)
	if !ok {
		return nil, fmt.Errorf("round: got %s, want number", x.Type())
	}
	if nd == starlark.None {
		return starlark.MakeInt64(int64(math.RoundToEven(f))), nil
	}
	n, err := starlark.AsInt32(nd)
	if err != nil {
		return nil, err
	}
	p := math.Pow(10, float64(n))
	return starlark.Float(math.RoundToEven(f*p) / p), nil
}

func (k *pythonKernel) getenv(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var key string
	var def starlark.Value = starlark.None
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "key", &key, "default?", &def); err != nil {
		return nil, err
	}
	v, found, err := k.environ.Get(starlark.String(key))
	if err != nil || !found {
		return def, err
	}
	return v, nil
}

func pyPathJoin(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	out := ""
	for _, a := range args {
		s, ok := starlark.AsString(a)
		if !ok {
			return nil, fmt.Errorf("%s: got %s, want str", b.Name(), a.Type())
		}
		switch {
		case strings.HasPrefix(s, "/") || out == "":
			out = s
		default:
			out = strings.TrimSuffix(out, "/") + "/" + s
		}
	}
	return starlark.String(path.Clean(out)), nil
}

func pyJSONDumps(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var v starlark.Value
	var indent starlark.Value = starlark.None
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "obj", &v, "indent?", &indent); err != nil {
		return nil, err
	}
	s, err := starlark.Call(thread, starjson.Module.Members["encode"], starlark.Tuple{v}, nil)
	if err != nil || indent == starlark.None {
		return s, err
	}
	n, err := starlark.AsInt32(indent)
	if err != nil {
		return nil, err
	}
	return starlark.Call(thread, starjson.Module.Members["indent"], starlark.Tuple{s}, []starlark.Tuple{{starlark.String("indent"), starlark.String(strings.Repeat(" ", n))}})
}

func pyTimeNow(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
	return starlark.Float(float64(time.Now().UnixNano()) / 1e9), nil
}

// pySleep is time.sleep: an interrupt (timeout, restart) ends it at once.
func pySleep(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var secs starlark.Value
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &secs); err != nil {
		return nil, err
	}
	f, ok := starlark.AsFloat(secs)
	if !ok || f < 0 {
		return nil, &pyException{"ValueError", "sleep length must be a non-negative number"}
	}
	if err := sleep(running(thread).ctx, time.Duration(f*float64(time.Second))); err != nil {
		return nil, err
	}
	return starlark.None, nil
}

// pyStreamValue is sys.stdout or sys.stderr.
type pyStreamValue struct {
	name   string
	writer func(kernelOutput) io.Writer
}

func pyStream(name string, w func(kernelOutput) io.Writer) *pyStreamValue {
	return &pyStreamValue{name: name, writer: w}
}

var _ starlark.HasAttrs = (*pyStreamValue)(nil)

func (s *pyStreamValue) String() string {
	return fmt.Sprintf("<_io.TextIOWrapper name='<%s>'>", s.name)
}
func (s *pyStreamValue) Type() string          { return "TextIOWrapper" }
func (s *pyStreamValue) Freeze()               {}
func (s *pyStreamValue) Truth() starlark.Bool  { return true }
func (s *pyStreamValue) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: %s", s.Type()) }
func (s *pyStreamValue) AttrNames() []string   { return []string{"flush", "write"} }

func (s *pyStreamValue) Attr(name string) (starlark.Value, error) {
	switch name {
	case "write":
		return starlark.NewBuiltin("write", func(t *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var text string
			if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &text); err != nil {
				return nil, err
			}
			n, err := io.WriteString(s.writer(running(t).out), text)
			return starlark.MakeInt(n), err
		}), nil
	case "flush":
		return starlark.NewBuiltin("flush", func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
			return starlark.None, nil
		}), nil
	}
	return nil, nil
}

// pyImage is IPython.display.Image(data=...): PNG bytes shown as a
// result's png (base64, as Jupyter's image/png).
type pyImage struct{ png string }

func pyNewImage(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var data starlark.Value
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "data", &data); err != nil {
		return nil, err
	}
	switch d := data.(type) {
	case starlark.Bytes:
		return &pyImage{png: base64.StdEncoding.EncodeToString([]byte(d))}, nil
	case starlark.String:
		return &pyImage{png: base64.StdEncoding.EncodeToString([]byte(d))}, nil
	}
	return nil, &pyException{"TypeError", "Image(data=...) takes bytes (filename= is not supported by the fake)"}
}

func (i *pyImage) String() string        { return "<IPython.core.display.Image object>" }
func (i *pyImage) Type() string          { return "Image" }
func (i *pyImage) Freeze()               {}
func (i *pyImage) Truth() starlark.Bool  { return true }
func (i *pyImage) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: Image") }

// pyStr is Python's str(v): a string as is, anything else as its repr.
func pyStr(v starlark.Value) string {
	if s, ok := v.(starlark.String); ok {
		return string(s)
	}
	return pyRepr(v)
}

// pyRepr is Python's repr(v) for the built-in types: strings in single
// quotes (Starlark's own String() uses double quotes), containers
// recursively.
func pyRepr(v starlark.Value) string {
	switch x := v.(type) {
	case starlark.String:
		s := string(x)
		if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
			return strconv.Quote(s)
		}
		q := strconv.Quote(s)
		q = strings.ReplaceAll(q[1:len(q)-1], `\"`, `"`)
		return "'" + strings.ReplaceAll(q, "'", `\'`) + "'"
	case *starlark.List:
		return "[" + joinRepr(x.Len(), x.Index) + "]"
	case starlark.Tuple:
		if len(x) == 1 {
			return "(" + pyRepr(x[0]) + ",)"
		}
		return "(" + joinRepr(len(x), x.Index) + ")"
	case *starlark.Dict:
		items := x.Items()
		parts := make([]string, len(items))
		for i, kv := range items {
			parts[i] = pyRepr(kv[0]) + ": " + pyRepr(kv[1])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return v.String()
}

func joinRepr(n int, at func(int) starlark.Value) string {
	parts := make([]string, n)
	for i := range n {
		parts[i] = pyRepr(at(i))
	}
	return strings.Join(parts, ", ")
}

func pyStrings(ss []string) *starlark.List {
	l := make([]starlark.Value, len(ss))
	for i, s := range ss {
		l[i] = starlark.String(s)
	}
	return starlark.NewList(l)
}

// pySysExit is sys.exit([code]): status 0 for None, the int, or 1 after
// printing a message.
func pySysExit(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var arg starlark.Value = starlark.None
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 0, &arg); err != nil {
		return nil, err
	}
	switch v := arg.(type) {
	case starlark.NoneType:
		return nil, &pyExit{0}
	case starlark.Int:
		n, _ := v.Int64()
		return nil, &pyExit{int(n)}
	}
	_, _ = io.WriteString(running(thread).out.stderr, pyStr(arg)+"\n")
	return nil, &pyExit{1}
}
