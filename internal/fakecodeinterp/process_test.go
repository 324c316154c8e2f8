package fakecodeinterp

import (
	"os/exec"
	"strings"
	"testing"
)

// processServer is a code interpreter whose kernels are real python3 and
// node processes; the test skips without them.
func processServer(t *testing.T, env map[string]string) (*Server, string) {
	t.Helper()
	for _, bin := range []string{"python3", "node", "bash"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not on PATH", bin)
		}
	}
	dir := t.TempDir() // the contexts' /home/user is the sandbox's
	p := &Processes{Prepare: func(c *exec.Cmd) { c.Dir = dir }}
	s, ts := newTestServer(t, Config{EnvVars: env, Processes: p, Shell: p.Shell()})
	return s, ts.URL
}

func TestProcessPython(t *testing.T) {
	_, base := processServer(t, map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin"})
	ex := execute(t, base, map[string]any{"code": "import sys, os\nx = [1, 'a']\nprint('hi', 2)\nprint('oops', file=sys.stderr)\nos.system('echo from-a-child')\nsum([1, 2, 3]) * 7"})
	if ex.err != nil {
		t.Fatalf("unexpected error: %v (stderr %q)", ex.err, ex.stderr)
	}
	if ex.stdout != "hi 2\nfrom-a-child\n" || ex.stderr != "oops\n" {
		t.Errorf("stdout %q stderr %q", ex.stdout, ex.stderr)
	}
	if len(ex.results) != 1 || ex.results[0]["text"] != "42" || ex.results[0]["is_main_result"] != true || ex.count != 1 {
		t.Errorf("results %v count %v, want one main result 42, count 1", ex.results, ex.count)
	}
	ex = execute(t, base, map[string]any{"code": "x, 'hello'", "language": "python"})
	if len(ex.results) != 1 || ex.results[0]["text"] != "([1, 'a'], 'hello')" || ex.count != 2 {
		t.Errorf("second cell: results %v count %v, want the state kept and repr text", ex.results, ex.count)
	}
	ex = execute(t, base, map[string]any{"code": "import asyncio\nawait asyncio.sleep(0)\nasync def five(): return 5\nawait five()"})
	if ex.err != nil || len(ex.results) != 1 || ex.results[0]["text"] != "5" {
		t.Errorf("top-level await: %v %v, want 5", ex.err, ex.results)
	}
	// The server strips the quotes of a str's repr (result.py).
	ex = execute(t, base, map[string]any{"code": "'hello'"})
	if len(ex.results) != 1 || ex.results[0]["text"] != "hello" {
		t.Errorf("a str result: %v, want hello without quotes", ex.results)
	}
}

// TestProcessPythonOrder: a display() between two prints arrives between
// them, whatever pipe each travelled.
func TestProcessPythonOrder(t *testing.T) {
	_, base := processServer(t, nil)
	ex := execute(t, base, map[string]any{"code": "class H:\n    def _repr_html_(self): return '<b>h</b>'\nprint('before')\ndisplay(H())\nprint('after')\nNone"})
	var order strings.Builder // stdout chunks as they came, a result as [html]
	for _, m := range ex.msgs {
		switch m["type"] {
		case "stdout":
			order.WriteString(m["text"].(string))
		case "result":
			order.WriteString("[" + m["html"].(string) + "]")
		}
	}
	if order.String() != "before\n[<b>h</b>]after\n" {
		t.Errorf("order %q, want before, the display, after", order.String())
	}
	if len(ex.results) != 1 || ex.results[0]["is_main_result"] != false {
		t.Errorf("results %v, want one display result", ex.results)
	}
}

func TestProcessPythonErrors(t *testing.T) {
	_, base := processServer(t, nil)
	ex := execute(t, base, map[string]any{"code": "print('ran')\n{}['k']"})
	if ex.err == nil || ex.err["name"] != "KeyError" || ex.err["value"] != "'k'" || ex.stdout != "ran\n" {
		t.Fatalf("error %v stdout %q, want KeyError 'k' after the print", ex.err, ex.stdout)
	}
	if tb := ex.err["traceback"].(string); !strings.Contains(tb, "Cell In[1]") || !strings.Contains(tb, "{}['k']") || strings.Contains(tb, "kernel_python") {
		t.Errorf("traceback %q should show the cell's line and no driver frame", tb)
	}
	ex = execute(t, base, map[string]any{"code": "def f(:\n  pass"})
	if ex.err == nil || ex.err["name"] != "SyntaxError" {
		t.Errorf("error %v, want SyntaxError", ex.err)
	}
	ex = execute(t, base, map[string]any{"code": "import os\nos._exit(3)"})
	if ex.err == nil || ex.err["name"] != "DeadKernelError" || !strings.Contains(ex.err["value"].(string), "exit status 3") {
		t.Errorf("error %v, want DeadKernelError with the exit status", ex.err)
	}
	ex = execute(t, base, map[string]any{"code": "'alive' if 'os' not in dir() else 'old state'"})
	if ex.err != nil || len(ex.results) != 1 || ex.results[0]["text"] != "alive" {
		t.Errorf("after the kernel died: %v %v, want a fresh process", ex.err, ex.results)
	}
}

func TestProcessEnvVarsAreScopedToOneExecution(t *testing.T) {
	_, base := processServer(t, map[string]string{"KEEP": "sandbox"})
	for _, lang := range []struct{ name, read, want, wantAfter string }{
		{"python", "import os\nos.getenv('KEEP', 'none') + ' ' + os.getenv('ONLY', 'none')", "call call", "sandbox none"},
		{"javascript", "(process.env.KEEP || 'none') + ' ' + (process.env.ONLY || 'none')", "call call", "sandbox none"},
	} {
		ex := execute(t, base, map[string]any{"code": lang.read, "language": lang.name, "env_vars": map[string]string{"KEEP": "call", "ONLY": "call"}})
		if ex.err != nil || len(ex.results) != 1 || ex.results[0]["text"] != lang.want {
			t.Errorf("%s with env_vars: %v %v", lang.name, ex.err, ex.results)
		}
		ex = execute(t, base, map[string]any{"code": lang.read, "language": lang.name})
		if ex.err != nil || len(ex.results) != 1 || ex.results[0]["text"] != lang.wantAfter {
			t.Errorf("%s after: %v %v, want the sandbox's KEEP and no ONLY", lang.name, ex.err, ex.results)
		}
	}
}

func TestProcessJavaScript(t *testing.T) {
	_, base := processServer(t, nil)
	ex := execute(t, base, map[string]any{"code": "var n = 6; console.log('hi'); console.error('oops'); n * 7", "language": "js"})
	if ex.err != nil || ex.stdout != "hi\n" || ex.stderr != "oops\n" || len(ex.results) != 1 || ex.results[0]["text"] != "42" {
		t.Fatalf("js: err %v stdout %q stderr %q results %v", ex.err, ex.stdout, ex.stderr, ex.results)
	}
	ex = execute(t, base, map[string]any{"code": "require('os').platform() && n + 1", "language": "javascript"})
	if ex.err != nil || len(ex.results) != 1 || ex.results[0]["text"] != "7" {
		t.Errorf("js state and require: %v %v", ex.err, ex.results)
	}
	ex = execute(t, base, map[string]any{"code": "Promise.resolve({a: 1})", "language": "javascript"})
	if ex.err != nil || len(ex.results) != 1 || ex.results[0]["text"] != "{ a: 1 }" {
		t.Errorf("js promise: %v %v", ex.err, ex.results)
	}
	ex = execute(t, base, map[string]any{"code": "null.x", "language": "javascript"})
	if ex.err == nil || ex.err["name"] != "TypeError" {
		t.Errorf("js error %v, want TypeError", ex.err)
	}
}

func TestProcessBash(t *testing.T) {
	_, base := processServer(t, map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin"})
	ex := execute(t, base, map[string]any{"code": "echo $BASH_VERSION | cut -c1; exit 3", "language": "bash"})
	if ex.stdout == "" || ex.stdout == "\n" || ex.err == nil || ex.err["value"] != "3" {
		t.Errorf("bash: stdout %q err %v, want a real bash's version digit and exit 3", ex.stdout, ex.err)
	}
}

// TestProcessRestartKillsTheKernel: a restart ends the running cell and
// the next one runs in a fresh process.
func TestProcessRestartKillsTheKernel(t *testing.T) {
	s, base := processServer(t, nil)
	execute(t, base, map[string]any{"code": "kept = 1"})
	post(t, base+"/contexts/"+s.defaults[LangPython]+"/restart", nil).Body.Close()
	ex := execute(t, base, map[string]any{"code": "'kept' in dir()"})
	if ex.err != nil || len(ex.results) != 1 || ex.results[0]["text"] != "False" || ex.count != 1 {
		t.Errorf("after restart: %v %v count %v, want fresh state and count 1", ex.err, ex.results, ex.count)
	}
}
