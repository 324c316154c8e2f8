package fakeenvd

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// shellCase is one script with its expected output and status.
type shellCase struct {
	name   string
	script string
	stdout string // exact, unless contains is set
	// contains lists substrings stdout must contain instead of an exact match.
	contains []string
	stderr   string // substring of stderr ("" = stderr must be empty)
	code     int
}

func runShellCases(t *testing.T, d *Daemon, cases []shellCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, d, tc.script)
			if tc.contains != nil {
				for _, s := range tc.contains {
					if !strings.Contains(r.stdout, s) {
						t.Errorf("stdout %q does not contain %q", r.stdout, s)
					}
				}
			} else if r.stdout != tc.stdout {
				t.Errorf("stdout = %q, want %q", r.stdout, tc.stdout)
			}
			if tc.stderr == "" && r.stderr != "" || !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("stderr = %q, want it to contain %q", r.stderr, tc.stderr)
			}
			if r.code() != tc.code {
				t.Errorf("exit code = %d, want %d (stderr %q)", r.code(), tc.code, r.stderr)
			}
		})
	}
}

func TestShellLanguage(t *testing.T) {
	d := newDaemon(t, Config{EnvVars: map[string]string{"SANDBOX_VAR": "from-config"}})
	runShellCases(t, d, []shellCase{
		{name: "echo and exit", script: "echo hi; exit 3", stdout: "hi\n", code: 3},
		{name: "exit wraps", script: "exit 300", code: 44},
		{name: "stderr", script: "echo oops >&2", stderr: "oops\n"},
		{name: "pipes", script: "printf 'b\\na\\nb\\n' | sort | uniq -c", stdout: "      1 a\n      2 b\n"},
		{name: "pipefail", script: "set -o pipefail; false | true", code: 1},
		{name: "redirect and append", script: "echo a > f; echo b >> f; cat f; wc -l < f", stdout: "a\nb\n2\n"},
		{name: "redirect stderr to file", script: "ls /nope 2> err.txt; cat err.txt", contains: []string{"No such file or directory"}},
		{name: "both to devnull", script: "ls /nope &> /dev/null; echo $?", stdout: "2\n"},
		{name: "dev stderr", script: "echo to-err > /dev/stderr", stderr: "to-err"},
		{name: "heredoc", script: "cat <<EOF\nline $((1+2))\nEOF", stdout: "line 3\n"},
		{name: "globs", script: "mkdir g && cd g && touch a.txt b.txt c.log && echo *.txt && ls *.log", stdout: "a.txt b.txt\nc.log\n"},
		{name: "no glob match stays literal", script: "cd /tmp && echo *.nothing", stdout: "*.nothing\n"},
		{name: "cd and pwd", script: "cd /tmp && pwd && cd - >/dev/null && pwd && cd && pwd", stdout: "/tmp\n/home/user\n/home/user\n"},
		{name: "cd missing", script: "cd /nope", stderr: "/nope", code: 1},
		{name: "cd into file", script: "touch file1; cd file1", stderr: "file1", code: 1},
		{name: "command substitution", script: "x=$(echo a | tr a b); echo $x", stdout: "b\n"},
		{name: "functions and return", script: "f() { echo in f $1; return 4; }; f arg; echo $?", stdout: "in f arg\n4\n"},
		{name: "set -e stops", script: "set -e; false; echo not reached", code: 1},
		{name: "arithmetic and loops", script: "s=0; for i in $(seq 1 10); do s=$((s+i)); done; echo $s", stdout: "55\n"},
		{name: "while read", script: "printf '1\\n2\\n3\\n' | while read n; do echo n=$n; done", stdout: "n=1\nn=2\nn=3\n"},
		{name: "test builtin", script: "touch t; [ -f t ] && [ -d /tmp ] && [ ! -e /nope ] && test -s /etc/hostname && echo ok", stdout: "ok\n"},
		{name: "double brackets", script: "[[ -d /usr/bin && abc == a* ]] && echo ok", stdout: "ok\n"},
		{name: "access checks", script: "[ -r /etc/hostname ] && [ -w ~ ] && [ -x /usr/bin/ls ] && ! [ -w /etc/hostname ] && echo ok", stdout: "ok\n"},
		{name: "owner tests do not panic", script: "[[ -O ~ ]] && [[ -G ~ ]] && ! [[ -O /etc ]] && echo ok", stdout: "ok\n"},
		{name: "unknown command", script: "nosuchcmd arg", stderr: "nosuchcmd: command not found", code: 127},
		{name: "ruby unavailable", script: "ruby -e 1", stderr: "ruby: command not found", code: 127},
		{name: "syntax error", script: "echo (", stderr: "bash:", code: 2},
		{name: "process substitution rejected", script: "cat <(echo x)", stderr: "process substitution", code: 2},
		{name: "config env", script: "echo $SANDBOX_VAR $HOME $USER $PATH", stdout: "from-config /home/user user " + defaultPath + "\n"},
		{name: "ids", script: "echo $UID $EUID", stdout: "1000 1000\n"},
		{name: "TMPDIR unset by default", script: "echo ${TMPDIR:-unset}; env | grep -c ^TMPDIR=", stdout: "unset\n0\n", code: 1},
		{name: "tilde", script: "echo ~ ~root ~nobody/x", stdout: "/home/user /root ~nobody/x\n"},
		{name: "export to child shell", script: "export A=1; B=2; bash -c 'echo ${A}-${B}'", stdout: "1-\n"},
		{name: "nested shells", script: "bash -c 'echo $0 $1' name one; sh -c 'exit 5'; echo $?", stdout: "name one\n5\n"},
		{name: "bash -e flag", script: "bash -ec 'false; echo no'; echo $?", stdout: "1\n"},
		{name: "script file with shebang", script: "printf '#!/bin/bash\\necho script $1\\n' > s.sh; chmod +x s.sh; ./s.sh a; bash s.sh b; sh ./s.sh c", stdout: "script a\nscript b\nscript c\n"},
		{name: "script without exec bit", script: "echo 'echo x' > n.sh; ./n.sh", stderr: "Permission denied", code: 126},
		{name: "bad interpreter", script: "printf '#!/usr/bin/ruby\\nputs 1\\n' > p.rb; chmod +x p.rb; ./p.rb", stderr: "bad interpreter", code: 126},
		{name: "env shebang", script: "printf '#!/usr/bin/env bash\\necho via env\\n' > e.sh; chmod 755 e.sh; ./e.sh", stdout: "via env\n"},
		{name: "script in PATH", script: "mkdir -p ~/bin; printf 'echo mine\\n' > ~/bin/mycmd; chmod +x ~/bin/mycmd; PATH=$PATH:$HOME/bin; mycmd; command -v mycmd", stdout: "mine\n/home/user/bin/mycmd\n"},
		{name: "source", script: "echo 'V=sourced' > lib.sh; source lib.sh; . ./lib.sh; echo $V", stdout: "sourced\n"},
		{name: "absolute builtin path", script: "/bin/echo hi; /usr/bin/ls -d /tmp", stdout: "hi\n/tmp\n"},
		{name: "directory as command", script: "/tmp", stderr: "Is a directory", code: 126},
		{name: "missing path command", script: "/usr/bin/nothing", stderr: "No such file or directory", code: 127},
		{name: "type and command -v", script: "type ls; type echo; type if; command -v cat; command -v nothing || echo none", stdout: "ls is /usr/bin/ls\necho is a shell builtin\nif is a shell keyword\n/usr/bin/cat\nnone\n"},
		{name: "type missing", script: "type nothing", stderr: "type: nothing: not found", code: 1},
		{name: "which", script: "which grep sh; which nothing; echo $?", stdout: "/usr/bin/grep\n/usr/bin/sh\n1\n"},
		{name: "pwd -P stays in memory", script: "mkdir -p /tmp/mem-only && cd /tmp/mem-only && pwd -P", stdout: "/tmp/mem-only\n"},
		{name: "background job output before end", script: "(sleep 0.05; echo bg) & echo fg", stdout: "fg\nbg\n"},
		{name: "wait", script: "sleep 0.02 & wait; echo done", stdout: "done\n"},
	})
}

func TestShellBuiltins(t *testing.T) {
	d := newDaemon(t, Config{})
	if err := d.FS().WriteFile("/home/user/data.txt", []byte("banana\napple\ncherry\napple\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runShellCases(t, d, []shellCase{
		{name: "cat", script: "cat data.txt | head -1; cat -n data.txt | tail -1", stdout: "banana\n     4\tapple\n"},
		{name: "cat missing", script: "cat nope", stderr: "cat: nope: No such file or directory", code: 1},
		{name: "cat directory", script: "cat /tmp", stderr: "Is a directory", code: 1},
		{name: "ls", script: "mkdir -p lsd/sub && touch lsd/b lsd/a lsd/.hidden && ls lsd && ls -a lsd | head -3 && ls -A lsd | head -1", stdout: "a\nb\nsub\n.\n..\n.hidden\n.hidden\n"},
		{name: "ls -l", script: "printf 12345 > sized; ls -l sized", contains: []string{"-rw-r--r-- 1 user user 5 ", " sized\n"}},
		{name: "ls -R", script: "mkdir -p r/x && touch r/x/y && ls -R r", stdout: "r:\nx\n\nr/x:\ny\n"},
		{name: "ls missing", script: "ls /nope", stderr: "cannot access '/nope'", code: 2},
		{name: "ls symlink", script: "ls -l /bin", contains: []string{"lrwxrwxrwx 1 root root 7 ", "bin -> usr/bin"}},
		{name: "mkdir", script: "mkdir m1 && mkdir -p m1/a/b && mkdir m1; echo $?", stdout: "1\n", stderr: "File exists"},
		{name: "mkdir without parents", script: "mkdir x/y/z", stderr: "No such file or directory", code: 1},
		{name: "rm", script: "touch r1; rm r1; rm r1", stderr: "cannot remove 'r1'", code: 1},
		{name: "rm -f and -r", script: "rm -f nothing; mkdir -p rr/a; rm rr; rm -r rr; ls rr", stderr: "Is a directory", code: 2},
		{name: "rmdir non-empty", script: "mkdir -p e/f; rmdir e", stderr: "Directory not empty", code: 1},
		{name: "cp", script: "cp data.txt c1 && cat c1 | wc -l && mkdir cd && cp data.txt cd && ls cd", stdout: "4\ndata.txt\n"},
		{name: "cp -r", script: "mkdir -p src/in && echo x > src/in/f && cp -r src dst && cat dst/in/f && cp src nodir", stdout: "x\n", stderr: "-r not specified", code: 1},
		{name: "mv", script: "echo m > m1f && mv m1f m2f && cat m2f && ls m1f", stdout: "m\n", stderr: "No such file", code: 2},
		{name: "touch", script: "touch new && test -f new && touch -c absent && ! test -e absent && echo ok", stdout: "ok\n"},
		{name: "ln -s", script: "echo t > tgt; ln -s tgt lnk; cat lnk; readlink lnk; readlink -f lnk", stdout: "t\ntgt\n/home/user/tgt\n"},
		{name: "stat", script: "printf abc > st; stat -c '%n %s %a %U %F' st", stdout: "st 3 644 user regular file\n"},
		{name: "stat default", script: "stat /tmp", contains: []string{"File: /tmp", "directory", "(1777/drwxrwxrwt)"}},
		{name: "find", script: "mkdir -p fd/a/b && touch fd/a/x.go fd/a/b/y.go fd/z.txt && find fd -name '*.go' && find fd -type d -maxdepth 1", stdout: "fd/a/b/y.go\nfd/a/x.go\nfd\nfd/a\n"},
		{name: "chmod", script: "touch cm; chmod 600 cm; stat -c %a cm; chmod +x cm; stat -c %a cm; chmod go-w,u=rw cm; stat -c %A cm", stdout: "600\n711\n-rw---x--x\n"},
		{name: "mktemp", script: "f=$(mktemp); test -f $f && echo $f | grep -c '^/tmp/tmp\\.'; d=$(mktemp -d); test -d $d && echo dir", stdout: "1\ndir\n"},
		{name: "realpath", script: "cd /usr/../tmp && realpath . && realpath /bin/ls", stdout: "/tmp\n/usr/bin/ls\n"},
		{name: "head", script: "seq 100 | head -n 3; seq 10 | head -2; printf abcdef | head -c 4; echo; seq 5 | head -n -3", stdout: "1\n2\n3\n1\n2\nabcd\n1\n2\n"},
		{name: "tail", script: "seq 100 | tail -n 2; seq 5 | tail -n +4; printf abcdef | tail -c 2; echo", stdout: "99\n100\n4\n5\nef\n"},
		{name: "wc", script: "printf 'a b\\nc\\n' > w; wc -l w; wc -w < w; wc -c w; wc w", stdout: "2 w\n3\n6 w\n2 3 6 w\n"},
		{name: "wc stdin", script: "echo hello world | wc", stdout: "      1       2      12\n"},
		{name: "seq", script: "seq 3; seq 2 2 6; seq -s, 3; seq 3 -1 1; seq 0.5 0.5 1.5; seq -w 8 10", stdout: "1\n2\n3\n2\n4\n6\n1,2,3\n3\n2\n1\n0.5\n1.0\n1.5\n08\n09\n10\n"},
		{name: "base64", script: "printf 'hello' | base64; echo aGVsbG8= | base64 -d; echo; head -c 60 /dev/zero | base64 -w 0 | wc -c", stdout: "aGVsbG8=\nhello\n80\n"},
		{name: "base64 bad input", script: "echo '!!!' | base64 -d", stderr: "invalid input", code: 1},
		{name: "sha256sum", script: "printf abc | sha256sum; printf abc > h; sha256sum h; md5sum h", stdout: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  -\nba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  h\n900150983cd24fb0d6963f7d28e17f72  h\n"},
		{name: "printf and echo", script: "printf '%s=%03d\\n' a 7; echo -n no-newline; echo; echo -e 'a\\tb'", stdout: "a=007\nno-newline\na\tb\n"},
		{name: "true false", script: "true && ! false && env true && echo ok; false", stdout: "ok\n", code: 1},
		{name: "yes", script: "yes | head -3; yes ab | head -n 2", stdout: "y\ny\ny\nab\nab\n"},
		{name: "grep", script: "grep apple data.txt; grep -c apple data.txt; grep -v -n apple data.txt; grep -i APPLE data.txt | head -1", stdout: "apple\napple\n2\n1:banana\n3:cherry\napple\n"},
		{name: "grep regexps", script: "grep -E '^(b|c)' data.txt; grep 'an\\+' data.txt; grep -F 'a.p' data.txt; echo $?", stdout: "banana\ncherry\nbanana\n1\n"},
		{name: "grep -q -l -o -w", script: "grep -q cherry data.txt && echo found; grep -l apple data.txt /etc/hostname; echo 'foo foobar' | grep -o 'foo[a-z]*'; echo 'ab abc' | grep -ow ab", stdout: "found\ndata.txt\nfoo\nfoobar\nab\n"},
		{name: "grep no match", script: "grep zzz data.txt", code: 1},
		{name: "grep -r", script: "mkdir -p gr/s && echo needle > gr/s/f && echo hay > gr/g && grep -r needle gr", stdout: "gr/s/f:needle\n"},
		{name: "sort", script: "sort data.txt; sort -u data.txt | wc -l; printf '10\\n9\\n100\\n' | sort -n; printf 'b 2\\na 10\\n' | sort -k2 -n; sort -r data.txt | head -1", stdout: "apple\napple\nbanana\ncherry\n3\n9\n10\n100\nb 2\na 10\ncherry\n"},
		{name: "uniq", script: "sort data.txt | uniq; sort data.txt | uniq -d; sort data.txt | uniq -u", stdout: "apple\nbanana\ncherry\napple\nbanana\ncherry\n"},
		{name: "tr", script: "echo hello | tr a-z A-Z; echo hello | tr -d l; echo aabbcc | tr -s ab; echo 'a:b' | tr ':' '\\n'; echo abc | tr '[:lower:]' '[:upper:]'", stdout: "HELLO\nheo\nabcc\na\nb\nABC\n"},
		{name: "tee", script: "echo teed | tee t1 t2 >/dev/null; cat t1 t2; echo more | tee -a t1 >/dev/null; cat t1", stdout: "teed\nteed\nteed\nmore\n"},
		{name: "cut", script: "echo a,b,c,d | cut -d, -f2,4; echo abcdef | cut -c2-4; printf 'x\\ty\\n' | cut -f2", stdout: "b,d\nbcd\ny\n"},
		{name: "basename dirname", script: "basename /a/b/c.txt; basename /a/b/c.txt .txt; dirname /a/b/c.txt; dirname c; dirname /", stdout: "c.txt\nc\n/a/b\n.\n/\n"},
		{name: "date", script: "date +%Y | grep -c '^20[0-9][0-9]$'; date -d @0 -u +%F", stdout: "1\n1970-01-01\n"},
		{name: "whoami id uname hostname", script: "whoami; id; id -u; uname; uname -n; hostname", stdout: "user\nuid=1000(user) gid=1000(user) groups=1000(user)\n1000\nLinux\ne2b.local\ne2b.local\n"},
		{name: "pwd builtin", script: "cd /usr/bin; pwd", stdout: "/usr/bin\n"},
		{name: "env printenv", script: "env | grep -c '^HOME=/home/user$'; printenv USER; printenv NOPE; echo $?; env -i X=1 env; FOO=bar env | grep ^FOO", stdout: "1\nuser\n1\nX=1\nFOO=bar\n"},
		{name: "sleep", script: "sleep 0.01 && echo slept", stdout: "slept\n"},
		{name: "sleep bad", script: "sleep abc", stderr: "invalid time interval", code: 1},
		{name: "xargs", script: "printf 'a\\nb\\nc\\n' | xargs echo; printf 'a b c' | xargs -n 1 echo x; printf '1\\n2\\n' | xargs -I{} echo n{}", stdout: "a b c\nx a\nx b\nx c\nn1\nn2\n"},
		{name: "timeout", script: "timeout 0.05 sleep 5; echo $?; timeout 5 echo fast", stdout: "124\nfast\n"},
		{name: "rev", script: "echo abc | rev", stdout: "cba\n"},
	})
}

func TestShellCustomBuiltins(t *testing.T) {
	d := newDaemon(t, Config{Builtins: map[string]Builtin{
		"hello": func(_ context.Context, inv *Invocation) int {
			fmt.Fprintf(inv.Stdout, "hello %s from %s\n", strings.Join(inv.Args[1:], " "), inv.Dir)
			return 7
		},
		"cat": nil,
	}})
	runShellCases(t, d, []shellCase{
		{name: "added", script: "cd /tmp; hello world", stdout: "hello world from /tmp\n", code: 7},
		{name: "removed", script: "cat /etc/hostname", stderr: "cat: command not found", code: 127},
		{name: "stub", script: "ls /usr/bin/hello && ! test -e /usr/bin/cat && echo ok", stdout: "/usr/bin/hello\nok\n"},
	})
	if !slices.Contains(d.Builtins(), "hello") || slices.Contains(d.Builtins(), "cat") {
		t.Fatalf("Builtins() = %v", d.Builtins())
	}
}

func TestShellProcessOptions(t *testing.T) {
	d := newDaemon(t, Config{EnvVars: map[string]string{"A": "config", "B": "config"}})
	req := bashReq("pwd; echo $A $B $C")
	req.Process.Cwd = ptr("/tmp")
	req.Process.Envs = map[string]string{"B": "request", "C": "request"}
	_, sub := start(t, d, req)
	if r := collect(t, sub); r.stdout != "/tmp\nconfig request request\n" {
		t.Fatalf("stdout = %q", r.stdout)
	}
	// A plain command (not a shell) runs through the same built-ins.
	_, sub = start(t, d, &envdapi.StartRequest{Process: envdapi.ProcessConfig{Cmd: "echo", Args: []string{"a b", "$HOME"}}})
	if r := collect(t, sub); r.stdout != "a b $HOME\n" {
		t.Fatalf("stdout = %q", r.stdout)
	}
	_, sub = start(t, d, &envdapi.StartRequest{Process: envdapi.ProcessConfig{Cmd: "ls", Args: []string{"-d", "/tmp"}}})
	if r := collect(t, sub); r.stdout != "/tmp\n" {
		t.Fatalf("stdout = %q", r.stdout)
	}
	// Relative and ~ cwd resolve against the home directory.
	d.FS().MkdirAll("/home/user/proj", 0o755)
	for _, cwd := range []string{"proj", "~/proj"} {
		req := bashReq("pwd")
		req.Process.Cwd = ptr(cwd)
		_, sub := start(t, d, req)
		if r := collect(t, sub); r.stdout != "/home/user/proj\n" {
			t.Fatalf("cwd %q: stdout = %q", cwd, r.stdout)
		}
	}
	// A missing cwd is rejected before the process starts.
	a, _ := d.account("")
	req = bashReq("pwd")
	req.Process.Cwd = ptr("/nope")
	if _, _, err := d.startProcess(a, req, 0); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("missing cwd: %v", err)
	}
	// Processes of root run as root.
	root, _ := d.account("root")
	_, sub, err := d.startProcess(root, bashReq("whoami; echo $HOME; cd; pwd; touch /tmp/rootfile; stat -c %U /tmp/rootfile"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if r := collect(t, sub); r.stdout != "root\n/root\n/root\nroot\n" {
		t.Fatalf("root stdout = %q", r.stdout)
	}
}

func TestShellDiskQuota(t *testing.T) {
	d := newDaemon(t, Config{DiskQuota: 64 << 10})
	r := run(t, d, "head -c 100000 /dev/zero > big; echo $?; ls -l big | cut -d' ' -f5; rm big; echo small > s && cat s")
	if !strings.Contains(r.stderr, "No space left on device") {
		t.Fatalf("stderr = %q", r.stderr)
	}
	lines := strings.Split(r.stdout, "\n")
	if lines[0] != "1" || lines[2] != "small" {
		t.Fatalf("stdout = %q", r.stdout)
	}
	if used, _ := d.FS().Usage(); used > 64<<10 {
		t.Fatalf("used %d beyond quota", used)
	}
}
