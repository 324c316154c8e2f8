package fakecodeinterp

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"go.starlark.net/starlark"
)

// FS is the sandbox filesystem that Python's open() reads and writes (the
// fake's in-memory tree; fakeenvd's *MemFS satisfies it).
type FS interface {
	ReadFile(name string) ([]byte, error)
	WriteFile(name string, data []byte, perm fs.FileMode) error
}

// pyOpen is open(file, mode='r'): modes r, w, a, x with b for bytes. A
// written file is stored on every write, so no close is needed.
func (k *pythonKernel) pyOpen(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var name string
	mode := "r"
	var encoding starlark.Value
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "file", &name, "mode?", &mode, "encoding?", &encoding); err != nil {
		return nil, err
	}
	if k.fs == nil {
		return nil, &pyException{"OSError", "open() has no filesystem in this interpreter"}
	}
	p := name
	if !path.IsAbs(p) {
		p = path.Join(k.cwd, p)
	}
	f := &pyFile{fs: k.fs, name: name, path: p, mode: mode, binary: strings.Contains(mode, "b")}
	kind := strings.Trim(mode, "bt+")
	switch kind {
	case "r", "a":
		data, err := k.fs.ReadFile(p)
		switch {
		case err == nil:
			f.data = data
		case kind == "a" && errors.Is(err, fs.ErrNotExist):
		default:
			return nil, pyOSError(err, name)
		}
		if kind == "a" {
			f.writable = true
			if err := f.store(); err != nil {
				return nil, err
			}
		}
	case "w", "x":
		if _, err := k.fs.ReadFile(p); kind == "x" && err == nil {
			return nil, &pyException{"FileExistsError", fmt.Sprintf("[Errno 17] File exists: '%s'", name)}
		}
		f.writable = true
		if err := f.store(); err != nil {
			return nil, err
		}
	default:
		return nil, &pyException{"ValueError", fmt.Sprintf("invalid mode: '%s'", mode)}
	}
	return f, nil
}

func pyOSError(err error, name string) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &pyException{"FileNotFoundError", fmt.Sprintf("[Errno 2] No such file or directory: '%s'", name)}
	case errors.Is(err, fs.ErrPermission):
		return &pyException{"PermissionError", fmt.Sprintf("[Errno 13] Permission denied: '%s'", name)}
	case strings.Contains(err.Error(), "is a directory"):
		return &pyException{"IsADirectoryError", fmt.Sprintf("[Errno 21] Is a directory: '%s'", name)}
	}
	return &pyException{"OSError", fmt.Sprintf("%s: '%s'", unwrapPathError(err), name)}
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// pyFile is an open file: reads come from the content read at open,
// writes go to the sandbox at once.
type pyFile struct {
	fs               FS
	name, path, mode string
	binary, writable bool
	data             []byte
	pos              int
	closed           bool
}

var (
	_ starlark.HasAttrs = (*pyFile)(nil)
	_ starlark.Iterable = (*pyFile)(nil)
)

func (f *pyFile) String() string {
	return fmt.Sprintf("<_io.TextIOWrapper name='%s' mode='%s'>", f.name, f.mode)
}
func (f *pyFile) Type() string          { return "TextIOWrapper" }
func (f *pyFile) Freeze()               {}
func (f *pyFile) Truth() starlark.Bool  { return true }
func (f *pyFile) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: %s", f.Type()) }
func (f *pyFile) AttrNames() []string {
	return []string{"close", "closed", "flush", "name", "read", "readline", "readlines", "write", "writelines"}
}

func (f *pyFile) store() error {
	if err := f.fs.WriteFile(f.path, f.data, 0o644); err != nil {
		return pyOSError(err, f.name)
	}
	return nil
}

func (f *pyFile) value(b []byte) starlark.Value {
	if f.binary {
		return starlark.Bytes(b)
	}
	return starlark.String(b)
}

func (f *pyFile) readline() []byte {
	rest := f.data[f.pos:]
	n := len(rest)
	if i := strings.IndexByte(string(rest), '\n'); i >= 0 {
		n = i + 1
	}
	f.pos += n
	return rest[:n]
}

// Iterate yields the remaining lines, as iterating a Python file does.
func (f *pyFile) Iterate() starlark.Iterator {
	var lines []starlark.Value
	for f.pos < len(f.data) {
		lines = append(lines, f.value(f.readline()))
	}
	return starlark.NewList(lines).Iterate()
}

func (f *pyFile) Attr(name string) (starlark.Value, error) {
	switch name {
	case "name":
		return starlark.String(f.name), nil
	case "closed":
		return starlark.Bool(f.closed), nil
	}
	method := func(fn func(args starlark.Tuple) (starlark.Value, error)) starlark.Value {
		return starlark.NewBuiltin(name, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			if f.closed && name != "close" {
				return nil, &pyException{"ValueError", "I/O operation on closed file."}
			}
			return fn(args)
		})
	}
	switch name {
	case "read":
		return method(func(args starlark.Tuple) (starlark.Value, error) {
			n := len(f.data) - f.pos
			if len(args) > 0 {
				if want, err := starlark.AsInt32(args[0]); err == nil && want >= 0 && want < n {
					n = want
				}
			}
			out := f.data[f.pos : f.pos+n]
			f.pos += n
			return f.value(out), nil
		}), nil
	case "readline":
		return method(func(starlark.Tuple) (starlark.Value, error) { return f.value(f.readline()), nil }), nil
	case "readlines":
		return method(func(starlark.Tuple) (starlark.Value, error) {
			var lines []starlark.Value
			for f.pos < len(f.data) {
				lines = append(lines, f.value(f.readline()))
			}
			return starlark.NewList(lines), nil
		}), nil
	case "write", "writelines":
		return method(func(args starlark.Tuple) (starlark.Value, error) { return f.write(name, args) }), nil
	case "close", "flush":
		return method(func(starlark.Tuple) (starlark.Value, error) {
			f.closed = f.closed || name == "close"
			return starlark.None, nil
		}), nil
	}
	return nil, nil
}

func (f *pyFile) write(name string, args starlark.Tuple) (starlark.Value, error) {
	if !f.writable {
		return nil, &pyException{"io.UnsupportedOperation", "not writable"}
	}
	if len(args) != 1 {
		return nil, fmt.Errorf("%s: got %d arguments, want 1", name, len(args))
	}
	var parts []starlark.Value
	if name == "writelines" {
		it := starlark.Iterate(args[0])
		if it == nil {
			return nil, fmt.Errorf("writelines: got %s, want iterable", args[0].Type())
		}
		defer it.Done()
		var x starlark.Value
		for it.Next(&x) {
			parts = append(parts, x)
		}
	} else {
		parts = []starlark.Value{args[0]}
	}
	n := 0
	for _, p := range parts {
		var b []byte
		switch v := p.(type) {
		case starlark.String:
			b = []byte(v)
		case starlark.Bytes:
			b = []byte(v)
		default:
			return nil, &pyException{"TypeError", fmt.Sprintf("write() argument must be str, not %s", p.Type())}
		}
		f.data = append(f.data, b...)
		n += len(b)
	}
	if err := f.store(); err != nil {
		return nil, err
	}
	return starlark.MakeInt(n), nil
}
