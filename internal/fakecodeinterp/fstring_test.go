package fakecodeinterp

import (
	"context"
	"io/fs"
	"strings"
	"testing"
)

func TestFStrings(t *testing.T) {
	cases := []struct{ code, want string }{
		{`x = 3
print(f"x is {x}")`, "x is 3\n"},
		{`name = "py"
print(f'{name!r} {name.upper()} {{literal}} {[1, 2][0] + 1}')`, "'py' PY {literal} 2\n"},
		{`v = 3.14159
print(f"{v:.2f}|{v:8.3f}|{1234567:,}|{42:05d}|{'ab':>4}|{'ab':*^6}|{0.25:.1%}|{255:x}")`, "3.14|   3.142|1,234,567|00042|  ab|**ab**|25.0%|ff\n"},
		{`d = {"k": "v"}
print(f"{d['k']} # not a comment")  # a comment with f"{nope}"`, "v # not a comment\n"},
		{`s = "f'{x}' stays"
print(s, f"{len(s)}")`, "f'{x}' stays 12\n"},
		{`print(format(2.5, "+.1f"), format(-7, "4d"))`, "+2.5   -7\n"},
		{`items = [1, "a"]
print(f"{items} {repr('q')}")`, "[1, 'a'] 'q'\n"},
	}
	for _, c := range cases {
		var out, errOut strings.Builder
		code := RunPython(context.Background(), Program{Source: c.code, Name: "-c", Stdout: &out, Stderr: &errOut})
		if code != 0 || out.String() != c.want {
			t.Errorf("%s\n=> exit %d stdout %q stderr %q, want %q", c.code, code, out.String(), errOut.String(), c.want)
		}
	}
}

func TestFStringOutsideSubset(t *testing.T) {
	var out, errOut strings.Builder
	code := RunPython(context.Background(), Program{Source: "x = 1\nprint(f\"{x=}\")", Name: "-c", Stdout: &out, Stderr: &errOut})
	if code != 1 || !strings.Contains(errOut.String(), "NotImplementedError") {
		t.Errorf("exit %d stderr %q, want NotImplementedError", code, errOut.String())
	}
}

func TestPythonRandomMapFilter(t *testing.T) {
	src := `import random
random.seed(7)
a = [random.randint(1, 6) for _ in range(5)]
random.seed(7)
b = [random.randint(1, 6) for _ in range(5)]
print(a == b, all([1 <= x and x <= 6 for x in a]), random.choice(["only"]))
print(map(lambda x: x * 2, [1, 2]), filter(None, [0, 1, "", "a"]), filter(lambda x: x > 1, range(4)))`
	var out, errOut strings.Builder
	code := RunPython(context.Background(), Program{Source: src, Name: "-c", Stdout: &out, Stderr: &errOut})
	if want := "True True only\n[2, 4] [1, 'a'] [2, 3]\n"; code != 0 || out.String() != want {
		t.Errorf("exit %d stdout %q stderr %q, want %q", code, out.String(), errOut.String(), want)
	}
}

func TestPythonBlockRewrites(t *testing.T) {
	cases := []struct {
		src, stdout, stderr string
		code                int
	}{
		{"with open('/tmp/w', 'w') as f:\n    pass", "", "OSError: open() has no filesystem", 1},
		{"try:\n    print('body')\nexcept Exception:\n    print('handler')\nfinally:\n    print('finally')", "body\nfinally\n", "", 0},
		{"try:\n    import numpy\nexcept ImportError as e:\n    print('no numpy')", "", "ModuleNotFoundError: No module named 'numpy'", 1},
		{"def f():\n    raise ValueError('bad') from None\nf()", "", "ValueError: bad", 1},
	}
	for _, c := range cases {
		var out, errOut strings.Builder
		code := RunPython(context.Background(), Program{Source: c.src, Name: "-c", Stdout: &out, Stderr: &errOut})
		if code != c.code || out.String() != c.stdout || !strings.Contains(errOut.String(), c.stderr) {
			t.Errorf("%s\n=> exit %d stdout %q stderr %q", c.src, code, out.String(), errOut.String())
		}
	}
}

// mapFS is an in-memory FS for open().
type mapFS map[string][]byte

func (m mapFS) ReadFile(name string) ([]byte, error) {
	if b, ok := m[name]; ok {
		return b, nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func (m mapFS) WriteFile(name string, data []byte, _ fs.FileMode) error {
	m[name] = append([]byte(nil), data...)
	return nil
}

func TestPythonOpen(t *testing.T) {
	files := mapFS{"/home/user/in.txt": []byte("one\ntwo\n")}
	_, ts := newTestServer(t, Config{FS: files})
	ex := execute(t, ts.URL, map[string]any{"code": "with open('in.txt') as f:\n    lines = [l.strip() for l in f]\nout = open('/tmp/out.txt', 'w')\nout.write('x')\nout.close()\na = open('/tmp/out.txt', 'a')\na.writelines(['y', 'z'])\nlines"})
	if ex.err != nil || ex.results[0]["text"] != "['one', 'two']" || string(files["/tmp/out.txt"]) != "xyz" {
		t.Errorf("err %v results %v out.txt %q", ex.err, ex.results, files["/tmp/out.txt"])
	}
	ex = execute(t, ts.URL, map[string]any{"code": "open('missing.txt').read()"})
	if ex.err == nil || ex.err["name"] != "FileNotFoundError" || ex.err["value"] != "[Errno 2] No such file or directory: 'missing.txt'" {
		t.Errorf("missing file: %v", ex.err)
	}
}
