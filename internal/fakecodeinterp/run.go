package fakecodeinterp

import (
	"context"
	"fmt"
	"io"
	"strconv"
)

// Program is one run of `python3` or `node` in the fake's shell: the same
// interpreters as the code interpreter's kernels, fresh for each run.
type Program struct {
	// Source is the program text; Name is its file name ("-c", "[eval]"
	// or the script's path) and Args the arguments after it.
	Source, Name string
	Args         []string
	// Dir is the working directory and Env the environment.
	Dir string
	Env map[string]string
	// FS is the filesystem of Python's open(), if any.
	FS FS
	// Stdout and Stderr receive the program's output.
	Stdout, Stderr io.Writer
	// PrintResult prints the value of the last expression, as `node -p`
	// does.
	PrintResult bool
}

// RunPython runs p as CPython runs a script: output as it comes, an
// uncaught exception's traceback on stderr and exit status 1, sys.exit's
// status. The last expression is not printed.
func RunPython(ctx context.Context, p Program) int {
	k := newPythonProgram(p.Dir, p.Env, append([]string{p.Name}, p.Args...))
	k.fs = p.FS
	_, xerr := k.exec(ctx, p.Source, kernelOutput{stdout: p.Stdout, stderr: p.Stderr, display: func(Result) {}})
	return programStatus(xerr, p.Stderr, "SystemExit")
}

// RunJavaScript runs p as Node runs a script or -e/-p code: an uncaught
// error's stack on stderr and exit status 1, process.exit's status.
func RunJavaScript(ctx context.Context, p Program) int {
	k := newJSKernel(p.Dir, p.Env)
	_ = k.vm.Get("process").ToObject(k.vm).Set("argv", append([]string{"node", p.Name}, p.Args...))
	res, xerr := k.exec(ctx, p.Source, kernelOutput{stdout: p.Stdout, stderr: p.Stderr, display: func(Result) {}})
	if xerr == nil && p.PrintResult {
		text := "undefined"
		if res != nil {
			text = res.Text
		}
		fmt.Fprintln(p.Stdout, text)
	}
	return programStatus(xerr, p.Stderr, "ProcessExit")
}

// programStatus reports an execution error as a command does.
func programStatus(xerr *ExecError, stderr io.Writer, exitName string) int {
	if xerr == nil {
		return 0
	}
	if xerr.Name == exitName {
		n, _ := strconv.Atoi(xerr.Value)
		return n
	}
	fmt.Fprintln(stderr, xerr.Traceback)
	return 1
}
