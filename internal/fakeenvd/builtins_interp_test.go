package fakeenvd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestInterpreterBuiltins(t *testing.T) {
	d := newDaemon(t, Config{EnvVars: map[string]string{"SANDBOX_VAR": "from-config"}})
	runShellCases(t, d, []shellCase{
		{name: "python3 -c", script: "python3 -c 'print(1 + 1)'", stdout: "2\n"},
		{name: "python alias and argv", script: "python -c 'import sys\nprint(sys.argv)' a b", stdout: "['-c', 'a', 'b']\n"},
		{name: "python env and cwd", script: "cd /tmp && X=1 python3 -c 'import os\nprint(os.getcwd(), os.environ[\"X\"], os.getenv(\"SANDBOX_VAR\"))'", stdout: "/tmp 1 from-config\n"},
		{name: "python file", script: "printf 'def f(n):\\n    return n * 2\\nprint(f(21))\\n' > p.py && python3 p.py", stdout: "42\n"},
		{name: "python stdin", script: "echo 'print(\"from stdin\")' | python3", stdout: "from stdin\n"},
		{name: "python shebang", script: "printf '#!/usr/bin/python3\\nprint(7)\\n' > s.py; chmod +x s.py; ./s.py", stdout: "7\n"},
		{name: "python open", script: "python3 -c 'f = open(\"out.txt\", \"w\")\nf.write(\"a\\nb\\n\")\nwith open(\"out.txt\") as g:\n    print(g.readlines())' && cat out.txt", stdout: "['a\\n', 'b\\n']\na\nb\n"},
		{name: "python open missing", script: "python3 -c 'open(\"/nope/x\")'", stderr: "FileNotFoundError: [Errno 2] No such file or directory: '/nope/x'", code: 1},
		{name: "python exception", script: "python3 -c '1/0'", stderr: "ZeroDivisionError: division by zero", code: 1},
		{name: "python unsupported import", script: "python3 -c 'import numpy'", stderr: "ModuleNotFoundError: No module named 'numpy'", code: 1},
		{name: "python sys.exit", script: "python3 -c 'import sys\nsys.exit(3)'; echo $?", stdout: "3\n"},
		{name: "python missing file", script: "python3 nope.py", stderr: "can't open file '/home/user/nope.py'", code: 2},
		{name: "python version", script: "python3 --version", stdout: fakePythonVersion + "\n"},
		{name: "node -e", script: "node -e 'console.log([1,2].map(x => x * 2).join(\",\"))'", stdout: "2,4\n"},
		{name: "node -p", script: "node -p '6 * 7'", stdout: "42\n"},
		{name: "node file and argv", script: "echo 'console.log(process.argv.slice(2).join(\" \"), process.env.SANDBOX_VAR)' > a.js && node a.js x y", stdout: "x y from-config\n"},
		{name: "node throw", script: "node -e 'throw new RangeError(\"r\")'", stderr: "RangeError: r", code: 1},
		{name: "node exit", script: "node -e 'process.exit(4)'; echo $?", stdout: "4\n"},
		// The programs of the kit's specs exec.run-code-default-python and
		// exec.run-code-javascript (conformance/specs_exec.go).
		{name: "kit python program", script: "cat > k.py <<'EOF'\nimport sys\nprint('py-' + 'ok')\nsys.exit(0)\nEOF\npython3 k.py", stdout: "py-ok\n"},
		{name: "kit javascript program", script: "echo \"console.log('js-' + 'ok'); process.exit(0);\" > k.js && node k.js", stdout: "js-ok\n"},
		// Neither interpreter can reach the host: no subprocess, no files.
		{name: "python has no subprocess", script: "python3 -c 'import subprocess'", stderr: "No module named 'subprocess'", code: 1},
		{name: "node has no child_process", script: "node -e 'require(\"child_process\").execSync(\"id\")'", stderr: "Cannot find module 'child_process'", code: 1},
		{name: "node missing file", script: "node nope.js", stderr: "Cannot find module '/home/user/nope.js'", code: 1},
	})
}

func TestCodeInterpreterBash(t *testing.T) {
	d := newDaemon(t, Config{})
	var out, errOut bytes.Buffer
	code := d.runShell(context.Background(), "echo $HOME $X; pwd; ls /nope", "/tmp", map[string]string{"HOME": "/home/user", "X": "x"}, &out, &errOut)
	if out.String() != "/home/user x\n/tmp\n" || code != 2 || errOut.Len() == 0 {
		t.Errorf("stdout %q stderr %q code %d", out.String(), errOut.String(), code)
	}
}

// TestCodeInterpreterClosesWithDaemon: killing the sandbox (Daemon.Close)
// cuts a running cell's stream, as it cuts envd's process streams.
func TestCodeInterpreterClosesWithDaemon(t *testing.T) {
	d := New(Config{})
	ts := httptest.NewServer(d.CodeInterpreter())
	t.Cleanup(ts.Close)
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
	d.Close()
	if rest, err := io.ReadAll(br); err == nil || strings.Contains(string(rest), "end_of_execution") {
		t.Errorf("after Close: %q, err %v; want a cut stream", rest, err)
	}
}
