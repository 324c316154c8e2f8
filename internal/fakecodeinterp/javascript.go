package fakecodeinterp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/dop251/goja"
)

// jsKernel runs JavaScript (ECMAScript 5.1 and most of ES6+, no modules,
// no top-level await) in goja. Globals persist across executions; a cell
// may declare again a top-level let or const (see topLevelLetToVar).
type jsKernel struct {
	vm  *goja.Runtime
	env *goja.Object
	cwd string
	out kernelOutput // the running execution's output
}

func newJSKernel(cwd string, env map[string]string) *jsKernel {
	k := &jsKernel{vm: goja.New(), cwd: cwd}
	k.env = k.vm.NewObject()
	for key, v := range env {
		_ = k.env.Set(key, v)
	}
	k.install()
	return k
}

// install defines console, process and require: console writes to the
// execution's streams; require fails as Node does for a missing module,
// since no npm package is available in-process.
func (k *jsKernel) install() {
	console := k.vm.NewObject()
	for _, name := range []string{"log", "info", "debug"} {
		_ = console.Set(name, k.printer(func(o kernelOutput) io.Writer { return o.stdout }))
	}
	for _, name := range []string{"error", "warn"} {
		_ = console.Set(name, k.printer(func(o kernelOutput) io.Writer { return o.stderr }))
	}
	_ = k.vm.Set("console", console)

	process := k.vm.NewObject()
	_ = process.Set("env", k.env)
	_ = process.Set("platform", "linux")
	_ = process.Set("argv", []string{"node"})
	_ = process.Set("cwd", func() string { return k.cwd })
	_ = process.Set("chdir", func(dir string) { k.cwd = dir })
	_ = process.Set("exit", func(code int) { k.vm.Interrupt(jsExit{code}) })
	_ = k.vm.Set("process", process)

	_ = k.vm.Set("require", func(call goja.FunctionCall) goja.Value {
		name := call.Argument(0).String()
		msg := fmt.Sprintf("Cannot find module '%s' (sandboxkit's fake code interpreter runs JavaScript in goja, without Node's modules)", name)
		e, err := k.vm.New(k.vm.Get("Error"), k.vm.ToValue(msg))
		if err != nil {
			panic(err)
		}
		_ = e.Set("code", "MODULE_NOT_FOUND")
		panic(e)
	})
}

func (k *jsKernel) printer(stream func(kernelOutput) io.Writer) func(goja.FunctionCall) goja.Value {
	return func(call goja.FunctionCall) goja.Value {
		parts := make([]string, len(call.Arguments))
		for i, a := range call.Arguments {
			parts[i] = k.format(a, false)
		}
		_, _ = io.WriteString(stream(k.out), strings.Join(parts, " ")+"\n")
		return goja.Undefined()
	}
}

// format renders v as console.log does: strings bare at the top level,
// objects and arrays as JSON (Node's util.inspect spacing differs).
func (k *jsKernel) format(v goja.Value, quoted bool) string {
	if v == nil || goja.IsUndefined(v) {
		return "undefined"
	}
	if goja.IsNull(v) {
		return "null"
	}
	if s, ok := v.Export().(string); ok {
		if quoted {
			return "'" + s + "'"
		}
		return s
	}
	if obj, ok := v.(*goja.Object); ok {
		if _, isFn := goja.AssertFunction(obj); isFn {
			return "[Function]"
		}
		if obj.ClassName() == "Error" {
			return obj.Get("stack").String()
		}
		if b, err := json.Marshal(obj.Export()); err == nil {
			return string(b)
		}
	}
	return v.String()
}

func (k *jsKernel) setenv(key, value string) { _ = k.env.Set(key, value) }
func (k *jsKernel) unsetenv(key string)      { _ = k.env.Delete(key) }

func (k *jsKernel) exec(ctx context.Context, code string, out kernelOutput) (*Result, *ExecError) {
	k.out = out
	stop := context.AfterFunc(ctx, func() { k.vm.Interrupt(context.Cause(ctx)) })
	defer stop()
	defer k.vm.ClearInterrupt()
	v, err := k.vm.RunScript("<cell>", topLevelLetToVar(code))
	if err != nil {
		return nil, k.jsError(err)
	}
	if v == nil || goja.IsUndefined(v) {
		return nil, nil
	}
	return &Result{Text: k.format(v, false)}, nil
}

// jsError turns a goja error into the kernel's error: the thrown Error's
// name and message, and its stack as the traceback.
func (k *jsKernel) jsError(err error) *ExecError {
	var interrupted *goja.InterruptedError
	if errors.As(err, &interrupted) {
		if exit, ok := interrupted.Value().(jsExit); ok {
			v := strconv.Itoa(exit.code)
			return &ExecError{Name: "ProcessExit", Value: v, Traceback: "process.exit(" + v + ")"}
		}
		return &ExecError{Name: "Interrupted", Value: "execution interrupted", Traceback: "Interrupted: execution interrupted"}
	}
	var syntaxErr *goja.CompilerSyntaxError
	if errors.As(err, &syntaxErr) {
		return &ExecError{Name: "SyntaxError", Value: syntaxErr.Message, Traceback: "SyntaxError: " + syntaxErr.Error()}
	}
	var exc *goja.Exception
	if errors.As(err, &exc) {
		if obj, ok := exc.Value().(*goja.Object); ok {
			name, msg := obj.Get("name"), obj.Get("message")
			if name != nil && msg != nil && !goja.IsUndefined(name) {
				return &ExecError{Name: name.String(), Value: msg.String(), Traceback: exc.String()}
			}
		}
		return &ExecError{Name: "Error", Value: k.format(exc.Value(), false), Traceback: exc.String()}
	}
	return &ExecError{Name: "Error", Value: err.Error(), Traceback: err.Error()}
}

// jsExit is the interrupt value of process.exit(code).
type jsExit struct{ code int }
