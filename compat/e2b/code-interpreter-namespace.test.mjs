// @e2b/code-interpreter 2.8.0 against `sandboxkit fake-provider --exec
// namespace`, whose sandboxes serve the code interpreter inside the sandbox
// with real kernels: each python context one long-lived python3 process,
// each javascript context one node process (internal/fakecodeinterp
// process.go). What E2B's template runs is CPython under Jupyter as the
// sandbox's user; these checks hold there and fail against an embedded
// interpreter. Skipped, with the probe's reason, where namespace sandboxes
// cannot start (not Linux, not root, no overlayfs).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Sandbox, TimeoutError } from '@e2b/code-interpreter';
import { startFakeProvider, useFakeEnv } from '../lib/sandboxkit.mjs';

let fake, sbx, skip = false;
try {
  fake = await startFakeProvider(['--exec', 'namespace']);
  useFakeEnv(fake.env);
  sbx = await Sandbox.create();
} catch (err) {
  skip = `namespace sandboxes unavailable here: ${err.message}`;
  await fake?.stop();
}
after(async () => {
  await sbx?.kill().catch(() => {});
  await fake?.stop();
});

// The standard library is CPython's own, and the kernel runs as the
// sandbox's user (uid 1000) in /home/user (main.py post_contexts default cwd).
test('python: a real CPython kernel of the sandbox user, state kept', { skip }, async () => {
  const ex = await sbx.runCode("import os, sys, subprocess\nn = 20\nprint(sys.implementation.name, os.getuid(), os.getcwd())\nn + 1");
  assert.equal(ex.error, undefined);
  assert.deepEqual(ex.logs.stdout, ['cpython 1000 /home/user\n']);
  assert.equal(ex.text, '21');
  const again = await sbx.runCode("subprocess.run(['git', '--version'], capture_output=True, text=True).stdout.split()[0], n * 2");
  assert.equal(again.text, "('git', 40)");
  assert.equal(again.executionCount, ex.executionCount + 1);
});

// parseOutput "error" (index.mjs:225-261): name, value and the traceback.
test('python: an exception is execution.error with its traceback', { skip }, async () => {
  const ex = await sbx.runCode("def f():\n    return {}['missing']\nf()");
  assert.equal(ex.error.name, 'KeyError');
  assert.equal(ex.error.value, "'missing'");
  assert.match(ex.error.traceback, /return \{\}\['missing'\]/);
});

// display() results are not the main result (messaging.py display_data).
test('python: display() of an object with _repr_html_ is an html result', { skip }, async () => {
  const ex = await sbx.runCode("class T:\n    def _repr_html_(self): return '<table></table>'\ndisplay(T())");
  assert.equal(ex.error, undefined);
  assert.equal(ex.results.length, 1);
  assert.equal(ex.results[0].html, '<table></table>');
  assert.equal(ex.results[0].isMainResult, false);
});

test('javascript: a node kernel with require and state', { skip }, async () => {
  const ex = await sbx.runCode("var os = require('os'); console.log(typeof process.versions.node); os.platform()", { language: 'js' });
  assert.equal(ex.error, undefined);
  assert.deepEqual(ex.logs.stdout, ['string\n']);
  assert.equal(ex.text, 'linux');
  const thrown = await sbx.runCode("os.nope()", { language: 'js' });
  assert.equal(thrown.error.name, 'TypeError');
});

// runCode timeoutMs aborts the request (index.mjs runCode); the kernel is
// interrupted and the context serves the next cell.
test('a timeout interrupts the real kernel, which runs the next cell', { skip }, async () => {
  await assert.rejects(sbx.runCode('import time\ntime.sleep(600)', { timeoutMs: 1000 }), TimeoutError);
  const ex = await sbx.runCode("'still here'");
  assert.equal(ex.error, undefined);
  assert.equal(ex.text, 'still here');
});
