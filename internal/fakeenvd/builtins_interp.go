package fakeenvd

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/sandboxkit/sandboxkit/internal/fakecodeinterp"
)

// Versions the fake interpreters report. They are not CPython or Node:
// see the fakecodeinterp package documentation for what they run.
const (
	fakePythonVersion = "Python 3.11.0"
	fakeNodeVersion   = "v22.0.0"
)

// interpBuiltins are python3, python and node, backed by the same
// in-process interpreters as the code interpreter on port 49999
// (fakecodeinterp: Python as Starlark, JavaScript in goja).
func interpBuiltins() map[string]Builtin {
	return map[string]Builtin{"python3": builtinPython, "python": builtinPython, "node": builtinNode}
}

// envMap returns the exported variables of inv as a map.
func (inv *Invocation) envMap() map[string]string {
	m := map[string]string{}
	for _, kv := range exportedEnv(inv.env) {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// builtinPython is `python3 [-flags] (-c code | file | -) [args...]`.
func builtinPython(ctx context.Context, inv *Invocation) int {
	args := inv.Args[1:]
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-" {
		switch flag := args[0]; flag {
		case "-V", "--version":
			fmt.Fprintln(inv.Stdout, fakePythonVersion)
			return 0
		case "-c":
			if len(args) < 2 {
				fmt.Fprintf(inv.Stderr, "Argument expected for the -c option\n")
				return 2
			}
			return inv.runPython(ctx, args[1], "-c", args[2:])
		case "-m":
			fmt.Fprintf(inv.Stderr, "%s: No module named %s\n", inv.Args[0], strings.Join(args[1:min(2, len(args))], ""))
			return 1
		default:
			args = args[1:] // -u, -B, -I, -E, ...: no effect here
		}
	}
	if len(args) == 0 || args[0] == "-" {
		src, err := readScript(ctx, inv)
		if err != nil {
			return 1
		}
		return inv.runPython(ctx, src, "-", args[min(1, len(args)):])
	}
	data, err := inv.FS.ReadFile(inv.Abs(args[0]))
	if err != nil {
		fmt.Fprintf(inv.Stderr, "%s: can't open file '%s': [Errno 2] %s\n", inv.Args[0], inv.Abs(args[0]), errnoText(unwrapPathErr(err)))
		return 2
	}
	return inv.runPython(ctx, string(data), args[0], args[1:])
}

func (inv *Invocation) runPython(ctx context.Context, src, name string, args []string) int {
	return fakecodeinterp.RunPython(ctx, inv.program(src, name, args))
}

func (inv *Invocation) program(src, name string, args []string) fakecodeinterp.Program {
	return fakecodeinterp.Program{Source: src, Name: name, Args: args, Dir: inv.Dir, Env: inv.envMap(), FS: inv.FS, Stdout: inv.Stdout, Stderr: inv.Stderr}
}

// builtinNode is `node (-e code | -p code | file | -) [args...]`.
func builtinNode(ctx context.Context, inv *Invocation) int {
	args := inv.Args[1:]
	if len(args) > 0 {
		switch args[0] {
		case "-v", "--version":
			fmt.Fprintln(inv.Stdout, fakeNodeVersion)
			return 0
		case "-e", "--eval", "-p", "--print":
			if len(args) < 2 {
				fmt.Fprintf(inv.Stderr, "%s: %s requires an argument\n", inv.Args[0], args[0])
				return 9
			}
			p := inv.program(args[1], "[eval]", args[2:])
			p.PrintResult = args[0] == "-p" || args[0] == "--print"
			return fakecodeinterp.RunJavaScript(ctx, p)
		}
	}
	if len(args) == 0 || args[0] == "-" {
		src, err := readScript(ctx, inv)
		if err != nil {
			return 1
		}
		return fakecodeinterp.RunJavaScript(ctx, inv.program(src, "[stdin]", args[min(1, len(args)):]))
	}
	data, err := inv.FS.ReadFile(inv.Abs(args[0]))
	if err != nil {
		fmt.Fprintf(inv.Stderr, "Error: Cannot find module '%s'\n", inv.Abs(args[0]))
		return 1
	}
	return fakecodeinterp.RunJavaScript(ctx, inv.program(string(data), inv.Abs(args[0]), args[1:]))
}

// CodeInterpreter returns a new code interpreter for this sandbox (the
// server of port 49999): its kernels start with the environment of the
// default user's processes, its Python opens files of this sandbox, and
// its bash runs in this daemon's shell as that user. The fake provider keeps one per sandbox.
func (d *Daemon) CodeInterpreter() *fakecodeinterp.Server {
	a := d.cfg.accounts()[1]
	env := map[string]string{}
	for _, kv := range d.processEnv(a, nil) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	srv := fakecodeinterp.New(fakecodeinterp.Config{EnvVars: env, Shell: d.runShell, FS: d.mem})
	context.AfterFunc(d.ctx, srv.Close) // the sandbox going away cuts running cells
	return srv
}

// runShell is the code interpreter's bash: script in a fresh shell of
// the default user, stopped when ctx ends or the daemon closes.
func (d *Daemon) runShell(ctx context.Context, src, dir string, env map[string]string, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(d.ctx, cancel)
	defer stop()
	a := d.cfg.accounts()[1]
	sh := d.shellFor(a)
	list := make([]string, 0, len(env))
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	inv := sh.rootInvocation(dir, list, strings.NewReader(""), stdout, stderr)
	return sh.runScript(ctx, inv, script{src: src, name: "bash"})
}
