package fakecodeinterp

import (
	"context"
	"io"
	"sync"
)

// kernel runs the code of one context and keeps its state (globals,
// environment) between executions, as a Jupyter kernel does.
type kernel interface {
	// exec runs code and returns the value of its last expression (nil when
	// there is none) or the error it raised. It writes print output to
	// out.stdout and out.stderr and display() results to out.display. It
	// stops with an error once ctx is done.
	exec(ctx context.Context, code string, out kernelOutput) (*Result, *ExecError)
	// setenv and unsetenv change the environment the kernel's code sees
	// (os.environ, process.env, the shell's variables).
	setenv(key, value string)
	unsetenv(key string)
}

// kernelOutput is where a running execution writes.
type kernelOutput struct {
	stdout, stderr io.Writer
	display        func(Result)
}

// codeContext is one context: a kernel, its execution counter and the
// cancel function of the execution it is running.
type codeContext struct {
	id, language, cwd string
	newKernel         func(cwd string, env map[string]string) kernel

	run sync.Mutex // held for a whole execution: a kernel runs one cell at a time

	mu      sync.Mutex
	kernel  kernel
	count   int
	running context.CancelCauseFunc
}

func (c *codeContext) describe() Context {
	return Context{ID: c.id, Language: c.language, Cwd: c.cwd}
}

// execute runs one cell: the execution count first (Jupyter's
// execute_input), then the output as it comes, then the result or the
// error. The per-execution envs are set before the code and reset to the
// sandbox's value, or removed, afterwards (template/server/messaging.py
// execute, _cleanup_env_vars).
//
// It returns false when the server closed under the execution (the
// sandbox is gone): the caller then cuts the stream instead of ending it.
func (c *codeContext) execute(ctx context.Context, code string, envs, global map[string]string, out *emitter) bool {
	c.run.Lock()
	defer c.run.Unlock()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	c.mu.Lock()
	k := c.kernel
	c.count++
	n := c.count
	c.running = cancel
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.running = nil
		c.mu.Unlock()
	}()

	out.count(n)
	for key, v := range envs {
		k.setenv(key, v)
	}
	defer resetEnv(k, envs, global)
	res, xerr := k.exec(ctx, code, kernelOutput{
		stdout:  streamWriter{out, typeStdout},
		stderr:  streamWriter{out, typeStderr},
		display: out.result,
	})
	switch cause := context.Cause(ctx); {
	case cause == errServerClosed:
		return false
	case cause == errContextRestarted || cause == errContextRemoved:
		// Jupyter's kernel died under the cell: the server reports the
		// stream's unexpected end (messaging.py _wait_for_result).
		out.error(&ExecError{Name: unexpectedEndName, Value: unexpectedEndValue})
	case xerr != nil:
		out.error(xerr)
	case res != nil:
		res.IsMainResult = true
		out.result(*res)
	}
	return true
}

func resetEnv(k kernel, envs, global map[string]string) {
	for key := range envs {
		if v, ok := global[key]; ok {
			k.setenv(key, v)
		} else {
			k.unsetenv(key)
		}
	}
}

// interrupt stops the running execution, if any, with cause.
func (c *codeContext) interrupt(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running != nil {
		c.running(cause)
	}
}

// restart interrupts the running execution and replaces the kernel with a
// fresh one: globals are gone and the execution count starts again, as
// after Jupyter's kernel restart.
func (c *codeContext) restart(global map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running != nil {
		c.running(errContextRestarted)
	}
	closeKernel(c.kernel)
	c.kernel = c.newKernel(c.cwd, global)
	c.count = 0
}

// closeKernel ends the context's kernel process, if it has one (an
// in-process kernel has nothing to end).
func (c *codeContext) closeKernel() {
	c.mu.Lock()
	defer c.mu.Unlock()
	closeKernel(c.kernel)
}

func closeKernel(k kernel) {
	if p, ok := k.(interface{ close() }); ok {
		p.close()
	}
}
