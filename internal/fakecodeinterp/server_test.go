package fakecodeinterp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// execution is a parsed /execute stream.
type execution struct {
	msgs    []map[string]any
	stdout  string
	stderr  string
	results []map[string]any
	err     map[string]any
	count   float64
}

func newTestServer(t *testing.T, cfg Config) (*Server, *httptest.Server) {
	t.Helper()
	s := New(cfg)
	ts := httptest.NewServer(s)
	t.Cleanup(func() { ts.Close(); s.Close() })
	return s, ts
}

func post(t *testing.T, url string, body any) *http.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func execute(t *testing.T, base string, body map[string]any) execution {
	t.Helper()
	resp := post(t, base+"/execute", body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("execute: %d %s", resp.StatusCode, b)
	}
	return readExecution(t, resp.Body)
}

func readExecution(t *testing.T, r io.Reader) execution {
	t.Helper()
	var ex execution
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		ex.msgs = append(ex.msgs, m)
		switch m["type"] {
		case "stdout":
			ex.stdout += m["text"].(string)
		case "stderr":
			ex.stderr += m["text"].(string)
		case "result":
			ex.results = append(ex.results, m)
		case "error":
			ex.err = m
		case "number_of_executions":
			ex.count = m["execution_count"].(float64)
		}
	}
	if n := len(ex.msgs); n == 0 || ex.msgs[n-1]["type"] != "end_of_execution" {
		t.Fatalf("the stream does not end with end_of_execution: %v", ex.msgs)
	}
	if ex.msgs[0]["type"] != "number_of_executions" {
		t.Fatalf("the stream does not start with number_of_executions: %v", ex.msgs)
	}
	return ex
}

func TestExecutePython(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	ex := execute(t, ts.URL, map[string]any{"code": "import sys\nx = [1, 'a']\nprint('hi', 2)\nprint('oops', file=sys.stderr)\nsum([1, 2, 3]) * 7"})
	if ex.err != nil {
		t.Fatalf("unexpected error: %v", ex.err)
	}
	if ex.stdout != "hi 2\n" || ex.stderr != "oops\n" {
		t.Errorf("stdout %q stderr %q", ex.stdout, ex.stderr)
	}
	if len(ex.results) != 1 || ex.results[0]["text"] != "42" || ex.results[0]["is_main_result"] != true {
		t.Errorf("results %v, want one main result 42", ex.results)
	}
	// State persists in the default context; strings lose their quotes.
	ex = execute(t, ts.URL, map[string]any{"code": "x", "language": "python"})
	if len(ex.results) != 1 || ex.results[0]["text"] != "[1, 'a']" || ex.count != 2 {
		t.Errorf("second cell: results %v count %v", ex.results, ex.count)
	}
	ex = execute(t, ts.URL, map[string]any{"code": "'hello'"})
	if ex.results[0]["text"] != "hello" {
		t.Errorf("string result %v, want hello without quotes", ex.results[0]["text"])
	}
}

func TestPythonErrors(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	cases := []struct{ code, name, value string }{
		{"print('before')\n1/0", "ZeroDivisionError", "division by zero"},
		{"import numpy", "ModuleNotFoundError", "No module named 'numpy'"},
		{"from os import nothing", "ImportError", "cannot import name 'nothing' from 'os'"},
		{"try: x = 1\nexcept: pass", "NotImplementedError", `the "try" statement`},
		{"class A:\n  pass", "NotImplementedError", `the "class" statement`},
		{"raise ValueError('bad value')", "ValueError", "bad value"},
		{"undefined_name + 1", "NameError", "name 'undefined_name' is not defined"},
		{"{}['k']", "KeyError", ""},
		{"x = (", "SyntaxError", ""},
	}
	for _, c := range cases {
		ex := execute(t, ts.URL, map[string]any{"code": c.code})
		if ex.err == nil {
			t.Errorf("%q: no error, want %s", c.code, c.name)
			continue
		}
		if ex.err["name"] != c.name || !strings.Contains(ex.err["value"].(string), c.value) {
			t.Errorf("%q: error %v, want %s containing %q", c.code, ex.err, c.name, c.value)
		}
		if tb, _ := ex.err["traceback"].(string); !strings.Contains(tb, c.name) {
			t.Errorf("%q: traceback %q does not name %s", c.code, tb, c.name)
		}
		if len(ex.results) != 0 {
			t.Errorf("%q: results %v after an error", c.code, ex.results)
		}
	}
	ex := execute(t, ts.URL, map[string]any{"code": "print('before')\n1/0"})
	if ex.stdout != "before\n" {
		t.Errorf("output before the error: %q", ex.stdout)
	}
}

func TestPythonDisplayPNG(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	ex := execute(t, ts.URL, map[string]any{"code": "from IPython.display import Image, display\ndisplay(Image(data=b'\\x89PNG'))\n3"})
	if len(ex.results) != 2 {
		t.Fatalf("results %v, want a display and the main result", ex.results)
	}
	if ex.results[0]["png"] != "iVBORw==" || ex.results[0]["is_main_result"] != false {
		t.Errorf("display result %v, want png iVBORw== not main", ex.results[0])
	}
	if ex.results[1]["text"] != "3" || ex.results[1]["is_main_result"] != true {
		t.Errorf("main result %v", ex.results[1])
	}
}

func TestExecuteJavaScript(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	ex := execute(t, ts.URL, map[string]any{"code": "var n = 40; console.log('hi', {a: 1}); console.error('warn'); n + 2", "language": "js"})
	if ex.err != nil || ex.stdout != "hi {\"a\":1}\n" || ex.stderr != "warn\n" {
		t.Fatalf("err %v stdout %q stderr %q", ex.err, ex.stdout, ex.stderr)
	}
	if len(ex.results) != 1 || ex.results[0]["text"] != "42" {
		t.Errorf("results %v", ex.results)
	}
	for range 2 { // a notebook cell re-run: its top-level const and let again
		ex = execute(t, ts.URL, map[string]any{"code": "const c = 1; let l = c + 1; { let l = 5 }\nl", "language": "javascript"})
		if ex.err != nil || ex.results[0]["text"] != "2" {
			t.Errorf("re-declared let/const: %v %v", ex.err, ex.results)
		}
	}
	ex = execute(t, ts.URL, map[string]any{"code": "n", "language": "javascript"})
	if ex.results[0]["text"] != "40" {
		t.Errorf("the javascript default context lost n: %v", ex.results)
	}
	ex = execute(t, ts.URL, map[string]any{"code": "throw new TypeError('nope')", "language": "javascript"})
	if ex.err == nil || ex.err["name"] != "TypeError" || ex.err["value"] != "nope" {
		t.Errorf("error %v, want TypeError nope", ex.err)
	}
	ex = execute(t, ts.URL, map[string]any{"code": "require('fs')", "language": "javascript"})
	if ex.err == nil || !strings.Contains(ex.err["value"].(string), "Cannot find module 'fs'") {
		t.Errorf("require: %v", ex.err)
	}
}

func TestExecuteBash(t *testing.T) {
	var gotDir string
	var gotEnv map[string]string
	shell := func(_ context.Context, script, dir string, env map[string]string, stdout, _ io.Writer) int {
		gotDir, gotEnv = dir, env
		fmt.Fprintf(stdout, "ran %s", script) // a line in two writes, as echo does
		fmt.Fprint(stdout, "\n")
		if strings.Contains(script, "fail") {
			return 3
		}
		return 0
	}
	_, ts := newTestServer(t, Config{Shell: shell, EnvVars: map[string]string{"BASE": "1"}})
	ex := execute(t, ts.URL, map[string]any{"code": "echo x", "language": "bash", "env_vars": map[string]string{"ONE": "2"}})
	if n := countType(ex, "stdout"); n != 1 {
		t.Errorf("%d stdout messages, want the line as one", n)
	}
	if ex.err != nil || ex.stdout != "ran echo x\n" || gotDir != DefaultCwd || gotEnv["BASE"] != "1" || gotEnv["ONE"] != "2" {
		t.Fatalf("err %v stdout %q dir %q env %v", ex.err, ex.stdout, gotDir, gotEnv)
	}
	ex = execute(t, ts.URL, map[string]any{"code": "fail", "language": "bash"})
	if ex.err == nil || ex.err["value"] != "3" || gotEnv["ONE"] != "" {
		t.Errorf("err %v env %v: want exit 3 and ONE reset", ex.err, gotEnv)
	}
}

func TestEnvVarsAreScopedToOneExecution(t *testing.T) {
	_, ts := newTestServer(t, Config{EnvVars: map[string]string{"KEEP": "sandbox"}})
	for _, lang := range []struct{ name, read string }{
		{"python", "import os\nos.getenv('KEEP', 'none') + ' ' + os.getenv('ONLY', 'none')"},
		{"javascript", "(process.env.KEEP || 'none') + ' ' + (process.env.ONLY || 'none')"},
	} {
		ex := execute(t, ts.URL, map[string]any{"code": lang.read, "language": lang.name, "env_vars": map[string]string{"KEEP": "call", "ONLY": "call"}})
		if ex.err != nil || ex.results[0]["text"] != "call call" {
			t.Errorf("%s with env_vars: %v %v", lang.name, ex.err, ex.results)
		}
		ex = execute(t, ts.URL, map[string]any{"code": lang.read, "language": lang.name})
		if ex.err != nil || ex.results[0]["text"] != "sandbox none" {
			t.Errorf("%s after: %v %v, want the sandbox's KEEP and no ONLY", lang.name, ex.err, ex.results)
		}
	}
}

func TestContexts(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	list := listContexts(t, ts.URL)
	if len(list) != 2 {
		t.Fatalf("default contexts %v, want python and javascript", list)
	}
	resp := post(t, ts.URL+"/contexts", map[string]any{"language": "python", "cwd": "/tmp"})
	var c Context
	_ = json.NewDecoder(resp.Body).Decode(&c)
	resp.Body.Close()
	if resp.StatusCode != 200 || c.ID == "" || c.Language != "python" || c.Cwd != "/tmp" {
		t.Fatalf("create: %d %+v", resp.StatusCode, c)
	}
	ex := execute(t, ts.URL, map[string]any{"code": "import os\ny = 5\nos.getcwd()", "context_id": c.ID})
	if ex.results[0]["text"] != "/tmp" {
		t.Errorf("cwd %v", ex.results)
	}
	// Contexts are isolated from the default one.
	if ex := execute(t, ts.URL, map[string]any{"code": "y"}); ex.err == nil || ex.err["name"] != "NameError" {
		t.Errorf("the default context sees y: %v", ex.err)
	}
	resp = post(t, ts.URL+"/contexts/"+c.ID+"/restart", nil)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("restart: %d", resp.StatusCode)
	}
	ex = execute(t, ts.URL, map[string]any{"code": "y", "context_id": c.ID})
	if ex.err == nil || ex.err["name"] != "NameError" || ex.count != 1 {
		t.Errorf("after restart: err %v count %v, want NameError and count 1", ex.err, ex.count)
	}
	req, _ := http.NewRequest(http.MethodDelete, ts.URL+"/contexts/"+c.ID, nil)
	resp, _ = http.DefaultClient.Do(req)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(listContexts(t, ts.URL)) != 2 {
		t.Errorf("remove: %d", resp.StatusCode)
	}
	resp = post(t, ts.URL+"/execute", map[string]any{"code": "1", "context_id": c.ID})
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || string(b) != "Context "+c.ID+" not found" {
		t.Errorf("removed context: %d %q", resp.StatusCode, b)
	}
	resp = post(t, ts.URL+"/execute", map[string]any{"code": "1", "context_id": "x", "language": "python"})
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("context and language: %d, want 400", resp.StatusCode)
	}
	resp = post(t, ts.URL+"/contexts", map[string]any{"language": "python3"})
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("python3 context: %d, want 200", resp.StatusCode)
	}
	resp = post(t, ts.URL+"/contexts", map[string]any{"language": "r"})
	resp.Body.Close()
	if resp.StatusCode != 500 {
		t.Errorf("unknown language: %d, want 500", resp.StatusCode)
	}
}

func listContexts(t *testing.T, base string) []Context {
	t.Helper()
	resp, err := http.Get(base + "/contexts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list []Context
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	return list
}

// TestAbortInterrupts checks the timeout path: the client abandons the
// stream (the SDK's timeoutMs abort) while the code sleeps for an hour; the
// context must be free for the next execution. Without the interrupt the
// next execution waits behind the sleep and the test times out.
func TestAbortInterrupts(t *testing.T) {
	for _, c := range []struct{ lang, code string }{
		{"python", "import time\nprint('start')\ntime.sleep(3600)"},
		{"javascript", "console.log('start'); while (true) {}"},
	} {
		_, ts := newTestServer(t, Config{})
		ctx, cancel := context.WithCancel(context.Background())
		b, _ := json.Marshal(map[string]any{"code": c.code, "language": c.lang})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/execute", bytes.NewReader(b))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() && !strings.Contains(sc.Text(), "start") {
		}
		cancel()
		resp.Body.Close()
		ex := execute(t, ts.URL, map[string]any{"code": "1 + 1", "language": c.lang})
		if ex.err != nil || ex.results[0]["text"] != "2" {
			t.Errorf("%s after abort: %v %v", c.lang, ex.err, ex.results)
		}
	}
}

// TestRestartEndsRunningExecution: a restart under a running cell ends its
// stream with the server's UnexpectedEndOfExecution error.
func TestRestartEndsRunningExecution(t *testing.T) {
	s, ts := newTestServer(t, Config{})
	id := s.defaults[LangPython]
	b, _ := json.Marshal(map[string]any{"code": "import time\nprint('start')\ntime.sleep(3600)"})
	resp, err := http.Post(ts.URL+"/execute", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	var head bytes.Buffer
	for !strings.Contains(head.String(), "start") {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		head.WriteString(line)
	}
	r := post(t, ts.URL+"/contexts/"+id+"/restart", nil)
	r.Body.Close()
	ex := readExecution(t, io.MultiReader(&head, br))
	if ex.err == nil || ex.err["name"] != unexpectedEndName {
		t.Errorf("error %v, want %s", ex.err, unexpectedEndName)
	}
}

func countType(ex execution, typ string) int {
	n := 0
	for _, m := range ex.msgs {
		if m["type"] == typ {
			n++
		}
	}
	return n
}

// TestCloseCutsRunningStream: when the sandbox goes away under a running
// cell, its stream is cut (no end_of_execution), like the fake's envd
// streams.
func TestCloseCutsRunningStream(t *testing.T) {
	s, ts := newTestServer(t, Config{})
	b, _ := json.Marshal(map[string]any{"code": "import time\nprint('start')\ntime.sleep(3600)"})
	resp, err := http.Post(ts.URL+"/execute", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, "start") {
			break
		}
	}
	s.Close()
	rest, err := io.ReadAll(br)
	if err == nil || strings.Contains(string(rest), "end_of_execution") {
		t.Errorf("stream after Close: %q, err %v; want a cut stream", rest, err)
	}
}
