// Package fakecodeinterp is the code interpreter of sandboxkit's fake
// sandboxes: the HTTP server that E2B's code-interpreter template runs on
// sandbox port 49999 (e2b-dev/code-interpreter template/server, a FastAPI
// front of Jupyter), served in-process. `@e2b/code-interpreter` (JS, 2.8.0)
// and `e2b-code-interpreter` (Python) call it through runCode/run_code and
// the context methods.
//
// # Routes
//
//   - POST /execute {code, context_id, language, env_vars}: a stream of JSON
//     lines: number_of_executions, stdout/stderr chunks as the code prints
//     them, result (the value of the cell's last expression, and display()
//     outputs; text and png), error {name, value, traceback}, and finally
//     end_of_execution (template/server/stream.py). Both context_id and
//     language: 400; an unknown context: 404 "Context <id> not found".
//   - POST /contexts {language, cwd} → {id, language, cwd}; GET /contexts;
//     POST /contexts/{id}/restart; DELETE /contexts/{id}. The python and
//     javascript default contexts exist from the start, as on E2B.
//   - GET /health.
//
// env_vars apply to one execution and are then reset to the sandbox's value
// or removed. A timeout is the SDK's: it aborts the request (runCode
// timeoutMs, default 60 s); the fake then interrupts the running code, as
// the real server interrupts the kernel when its client is gone. Restarting
// or removing a context interrupts its running execution, which ends with
// the server's UnexpectedEndOfExecution error.
//
// No host process is started: every language runs inside the Go process,
// unless [Config.Processes] is set (the fake's namespace sandboxes, inside
// the sandbox): then each python and javascript context is a real
// python3 or node process (process.go, kernel_python.py, kernel_node.js)
// and bash a real `bash -c` ([Processes.Shell]), with the same wire. The
// sections below describe the in-process interpreters.
//
// # Python: a Starlark dialect
//
// Python runs in go.starlark.net (Google's Starlark, a Python dialect;
// well kept) rather than gpython (a Python 3.4 subset, barely maintained).
// With while loops, top-level statements, global reassignment, sets and
// recursion turned on, the supported subset is:
//
//   - expressions, def, lambda, if/elif/else, for, while, break/continue,
//     list/dict comprehensions, str/list/dict/tuple/set methods, int
//     (arbitrary precision), float, bytes, print(sep=, end=, file=), sum,
//     round, map, filter (lists), format, repr (Python's quotes) and
//     Starlark's other builtins (len, range, sorted, enumerate, zip, min,
//     max, abs, any, all, str, int, float, ...); "%" and str.format;
//   - single-line f-strings, rewritten into str.format calls, with !r/!s
//     and the format-spec mini-language (fill, align, sign, 0, width, ",",
//     precision, types b c d e E f F g G n o s x X %);
//   - `import x`, `import x as y`, `from x import a, b` for the modules os
//     (environ, getenv, getcwd, sep, path.join), sys (stdout/stderr.write,
//     version, platform, argv, exit), math, json (dumps, loads), random
//     (seed, random, uniform, randint, choice, shuffle), time (time,
//     monotonic, sleep) and IPython.display (display, Image(data=png bytes)
//     for a png result);
//   - `raise Name(message)` (and `raise ... from e`) on its own line raises
//     exception Name;
//   - `with E as n:` runs its block once with n = E (no __exit__);
//     `try:`/`finally:` blocks run, `except` blocks never do: an exception
//     raised in a try body is not caught, it ends the cell with its own name
//     and message (and the finally block does not run). try/else after an
//     `except ... as e` is a SyntaxError.
//
// A program outside the subset gets a Python-style error, which the SDK
// shows as execution.error {name, value, traceback}:
//
//   - class, async/await, yield, global, nonlocal, del, assert, one-line
//     compound forms of try/except/with ("try: x()"), triple-quoted
//     f-strings and f"{x=}": NotImplementedError "<what> is outside the
//     Python subset of sandboxkit's fake code interpreter (Starlark ...)";
//   - any other module: ModuleNotFoundError "No module named 'x' (...
//     provides only os, sys, math, json, random, time and
//     IPython.display)";
//   - other syntax Starlark rejects: SyntaxError with Starlark's message.
//
// Runtime errors carry the Python name a CPython program would raise
// (ZeroDivisionError, KeyError, IndexError, AttributeError, ValueError,
// TypeError, NameError; RuntimeError otherwise) with Starlark's message.
// Known differences: an undefined name is found before the cell runs, so
// a cell that prints and then names an undefined variable prints nothing;
// results are repr() strings of built-in types only.
//
// open(file, mode) reads and writes the sandbox's in-memory files ([Config.FS]):
// modes r, w, a, x (+ b for bytes); read, readline, readlines, iteration,
// write, writelines, close. Writes reach the sandbox at once. Nothing in
// either interpreter can start a process or reach the host.
//
// # JavaScript
//
// JavaScript runs in github.com/dop251/goja (ES5.1 plus most of ES2015+,
// no ES modules, no top-level await). console.log/info/debug write stdout,
// console.error/warn stderr; process.env, process.cwd() and process.chdir()
// exist; require() throws Node's "Cannot find module" error (code
// MODULE_NOT_FOUND). The cell's completion value is its result; objects
// are shown as JSON. A cell may declare a top-level let or const again
// (they run as var, so a top-level const can be reassigned). typescript contexts use the same kernel, so type
// annotations are syntax errors.
//
// # Bash
//
// bash runs through [Config.Shell], which the fake provider backs with its
// in-memory shell. Each execution is a fresh shell in the context's
// directory; only environment variables carry over. A non-zero exit is an
// error with an empty name and the exit status as its value.
package fakecodeinterp
