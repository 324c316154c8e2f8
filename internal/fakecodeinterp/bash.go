package fakecodeinterp

import (
	"context"
	"maps"
	"strconv"
)

// bashKernel runs bash through the fake's shell ([Config.Shell]). Each
// execution is a fresh shell in the context's directory: shell variables
// do not persist between executions, only the environment set through
// env_vars and the sandbox's variables.
type bashKernel struct {
	shell Shell
	cwd   string
	env   map[string]string
}

func newBashKernel(shell Shell, cwd string, env map[string]string) *bashKernel {
	return &bashKernel{shell: shell, cwd: cwd, env: maps.Clone(env)}
}

func (k *bashKernel) setenv(key, value string) {
	if k.env == nil {
		k.env = map[string]string{}
	}
	k.env[key] = value
}

func (k *bashKernel) unsetenv(key string) { delete(k.env, key) }

// exec runs code; a non-zero exit is an error whose value is the exit
// status, with an empty name and traceback, as bash_kernel's execute_reply
// reports it and the server forwards it (template/server/messaging.py,
// execute_reply with status "error").
func (k *bashKernel) exec(ctx context.Context, code string, out kernelOutput) (*Result, *ExecError) {
	stdout, stderr := &lineWriter{w: out.stdout}, &lineWriter{w: out.stderr}
	status := k.shell(ctx, code, k.cwd, maps.Clone(k.env), stdout, stderr)
	stdout.flush()
	stderr.flush()
	if status != 0 {
		return nil, &ExecError{Name: "", Value: strconv.Itoa(status), Traceback: ""}
	}
	return nil, nil
}
