// @e2b/code-interpreter 2.8.0 (the SDK most public sandbox MCP servers are
// built on) against the fake's code interpreter on sandbox port 49999. Each
// check cites what the SDK does (compat/node_modules/@e2b/code-interpreter/
// dist/index.mjs line) or what E2B's server does (e2b-dev/code-interpreter
// template/server at 7df1757, file), never the fake. The fake runs Python as
// a Starlark dialect and JavaScript in goja (internal/fakecodeinterp): these
// programs stay inside what both run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Sandbox, NotFoundError, InvalidArgumentError, TimeoutError } from '@e2b/code-interpreter';
import { sandboxForFile } from '../lib/sandboxkit.mjs';

// index.mjs:685: the default template is code-interpreter-v1.
let sbx;
sandboxForFile(Sandbox, (_, s) => { sbx = s; });

// index.mjs:489-560 runCode posts /execute and reads JSON lines; 225-261
// parseOutput: stdout/stderr lines go to logs and the callbacks, "result" to
// results (is_main_result for the cell's value), number_of_executions to
// executionCount. The server sends the count first (messaging.py
// execute_input) and the value of the last expression as execute_result.
test('python: stdout, stderr, the main result and the execution count', async () => {
  const out = [], err = [];
  const ex = await sbx.runCode("import sys\nprint('hello')\nprint('oops', file=sys.stderr)\n21 * 2", {
    onStdout: (m) => out.push(m.line), onStderr: (m) => err.push(m.line),
  });
  assert.equal(ex.error, undefined);
  assert.deepEqual(ex.logs, { stdout: ['hello\n'], stderr: ['oops\n'] });
  assert.deepEqual(out, ['hello\n']);
  assert.deepEqual(err, ['oops\n']);
  assert.equal(ex.results.length, 1);
  assert.equal(ex.results[0].isMainResult, true);
  assert.equal(ex.text, '42'); // index.mjs:211 text of the main result
  assert.equal(typeof ex.executionCount, 'number');
  // Globals persist in the default python context; the count goes up.
  const again = await sbx.runCode("x = 'kept'\nx");
  assert.equal(again.text, 'kept'); // result.py strips the quotes of a str repr
  assert.equal(again.executionCount, ex.executionCount + 1);
});

// parseOutput "error" → ExecutionError(name, value, traceback); the server
// forwards the kernel's ename/evalue/traceback (messaging.py, error msg).
test('python: an exception is execution.error, after the output before it', async () => {
  const errors = [];
  const ex = await sbx.runCode("print('before')\n1/0", { onError: (e) => errors.push(e) });
  assert.deepEqual(ex.logs.stdout, ['before\n']);
  assert.equal(ex.error.name, 'ZeroDivisionError');
  assert.equal(ex.error.value, 'division by zero');
  assert.match(ex.error.traceback, /ZeroDivisionError/);
  assert.equal(errors.length, 1);
  assert.equal(ex.results.length, 0);
  const missing = await sbx.runCode('import numpy');
  assert.equal(missing.error.name, 'ModuleNotFoundError');
});

// Result (index.mjs:93-175) maps png and lists it in formats(); display()
// results are not the main result (messaging.py display_data →
// is_main_result false).
test('python: a displayed PNG is a png result', async () => {
  const ex = await sbx.runCode("from IPython.display import Image, display\ndisplay(Image(data=b'\\x89PNG'))");
  assert.equal(ex.error, undefined);
  assert.equal(ex.results.length, 1);
  assert.equal(ex.results[0].png, Buffer.from('\x89PNG', 'latin1').toString('base64'));
  assert.equal(ex.results[0].isMainResult, false);
  assert.deepEqual(ex.results[0].formats(), ['png']);
});

// runCode sends language; the server runs it in that language's default
// context (main.py post_execute, contexts.py normalize_language "js").
test('javascript: console output, result, thrown error', async () => {
  const ex = await sbx.runCode("console.log('from js'); console.error('warn'); [1, 2, 3].map(x => x * 2).join(',')", { language: 'javascript' });
  assert.equal(ex.error, undefined);
  assert.deepEqual(ex.logs, { stdout: ['from js\n'], stderr: ['warn\n'] });
  assert.equal(ex.text, '2,4,6');
  const thrown = await sbx.runCode("throw new TypeError('bad')", { language: 'js' });
  assert.equal(thrown.error.name, 'TypeError');
  assert.equal(thrown.error.value, 'bad');
});

test('bash: runs in the sandbox, whose files the SDK then reads', async () => {
  const ex = await sbx.runCode('echo from-bash | tee /tmp/ci-bash.txt; pwd', { language: 'bash' });
  assert.equal(ex.error, undefined);
  assert.equal(ex.logs.stdout.join(''), 'from-bash\n/home/user\n');
  assert.equal(await sbx.files.read('/tmp/ci-bash.txt'), 'from-bash\n');
});

// The kernel runs inside the sandbox (template: Jupyter in the sandbox's
// own filesystem), so a file Python writes is one the SDK's files.read
// returns, and a file the SDK writes is one Python reads.
test('python: open() reads and writes the sandbox\'s files', async () => {
  await sbx.files.write('/tmp/ci-in.txt', 'from-sdk\n');
  const ex = await sbx.runCode("with open('/tmp/ci-out.txt', 'w') as f:\n    f.write(open('/tmp/ci-in.txt').read().upper())");
  assert.equal(ex.error, undefined);
  assert.equal(await sbx.files.read('/tmp/ci-out.txt'), 'FROM-SDK\n');
});

// envs are sent as env_vars (index.mjs:514) and apply to that execution
// only (messaging.py execute: set before, _cleanup_env_vars after).
test('envs apply to one execution', async () => {
  const read = "import os\nos.getenv('CI_ONLY', 'unset')";
  assert.equal((await sbx.runCode(read, { envs: { CI_ONLY: 'set' } })).text, 'set');
  assert.equal((await sbx.runCode(read)).text, 'unset');
  const js = await sbx.runCode("process.env.CI_ONLY || 'unset'", { language: 'javascript', envs: { CI_ONLY: 'js' } });
  assert.equal(js.text, 'js');
});

// index.mjs:564-683: create returns the server's {id, language, cwd}
// (api/models/context.py); list, restart and remove call
// /contexts[/{id}[/restart]]; a removed context's execute is 404 (main.py
// post_execute "Context ... not found") → NotFoundError (index.mjs:74).
test('contexts: create, run in, list, restart, remove', async () => {
  const ctx = await sbx.createCodeContext({ language: 'python', cwd: '/tmp' });
  assert.equal(ctx.language, 'python');
  assert.equal(ctx.cwd, '/tmp');
  assert.equal(typeof ctx.id, 'string');
  const ex = await sbx.runCode("import os\nv = 1\nos.getcwd()", { context: ctx });
  assert.equal(ex.text, '/tmp');
  assert.equal((await sbx.runCode('v + 1', { context: ctx })).text, '2');
  const isolated = await sbx.runCode('v');
  assert.equal(isolated.error?.name, 'NameError', 'the default context does not see the new context\'s globals');
  const listed = await sbx.listCodeContexts();
  assert.ok(listed.some((c) => c.id === ctx.id && c.cwd === '/tmp'));
  assert.ok(listed.some((c) => c.language === 'javascript'), 'the javascript default context exists (main.py lifespan)');

  await sbx.restartCodeContext(ctx);
  const after = await sbx.runCode('v', { context: ctx });
  assert.equal(after.error?.name, 'NameError', 'a restart clears the globals');

  await sbx.removeCodeContext(ctx.id);
  assert.ok(!(await sbx.listCodeContexts()).some((c) => c.id === ctx.id));
  // requestTimeoutMs: runCode clears its request timer only on success
  // (index.mjs:522), so a rejected call would hold the event loop for the
  // default 60 s; 20 s stays far above the answer's loopback latency.
  await assert.rejects(sbx.runCode('1', { context: ctx, requestTimeoutMs: 20000 }), NotFoundError);
  // index.mjs:492: context and language together are refused by the SDK.
  await assert.rejects(sbx.runCode('1', { context: ctx, language: 'python' }), InvalidArgumentError);
});

// index.mjs:522-545: timeoutMs aborts the stream and rejects with
// TimeoutError "Execution timed out"; the server interrupts the abandoned
// execution (messaging.py _wait_for_result keepalive), so the
// context runs the next cell.
test('a timeout rejects with TimeoutError and frees the context', async () => {
  await assert.rejects(sbx.runCode("import time\ntime.sleep(3600)", { timeoutMs: 300 }), TimeoutError);
  assert.equal((await sbx.runCode('1 + 1')).text, '2');
  await assert.rejects(sbx.runCode('while (true) {}', { language: 'javascript', timeoutMs: 300 }), TimeoutError);
  assert.equal((await sbx.runCode('2 + 2', { language: 'javascript' })).text, '4');
});
