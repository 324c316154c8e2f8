// sandbox.commands of the official E2B SDK (e2b@2.51.0) against the fake's
// envd. Each check cites what the SDK does (compat/node_modules/e2b/dist/
// index.mjs line) or what envd does (e2b-dev/infra at 54693ff, file), never
// the fake.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Sandbox, CommandExitError, TimeoutError, SandboxNotFoundError } from 'e2b';
import { sandboxForFile, withTimeout } from '../lib/sandboxkit.mjs';

let sbx;
sandboxForFile(Sandbox, (_, s) => { sbx = s; });

// index.mjs:4550 run() = start() + wait(); 2333 wait() resolves
// {exitCode, error, stdout, stderr} when the end event has exit code 0.
test('run returns stdout, stderr and exit code 0', async () => {
  const r = await sbx.commands.run('echo out; echo err >&2');
  assert.equal(r.exitCode, 0);
  assert.equal(r.stdout, 'out\n');
  assert.equal(r.stderr, 'err\n');
});

// index.mjs:4560-4569 sends envs and cwd in process{}; envd applies them
// (infra packages/envd/internal/services/process/handler/handler.go: cmd.Env,
// cmd.Dir).
test('run applies envs and cwd', async () => {
  const r = await sbx.commands.run('echo "$GREETING"; pwd', { envs: { GREETING: 'hi there' }, cwd: '/tmp' });
  assert.equal(r.stdout, 'hi there\n/tmp\n');
});

// The sandbox's own env vars (create envs) reach every command (envd /init
// EnvVars merged into each process environment).
test('create envs reach commands; E2B_SANDBOX is set', async () => {
  const s = await Sandbox.create({ envs: { FROM_CREATE: 'yes' } });
  try {
    const r = await s.commands.run('echo "$FROM_CREATE $E2B_SANDBOX"');
    assert.equal(r.stdout, 'yes true\n');
  } finally {
    await s.kill();
  }
});

// index.mjs:2503-2511: onStdout/onStderr are called with each decoded chunk
// as data events arrive.
test('onStdout and onStderr stream the output', async () => {
  const out = [], err = [];
  const r = await sbx.commands.run('echo a; echo b >&2; echo c', {
    onStdout: (d) => out.push(d), onStderr: (d) => err.push(d),
  });
  assert.equal(out.join(''), 'a\nc\n');
  assert.equal(err.join(''), 'b\n');
  assert.equal(r.stdout, out.join(''));
});

// index.mjs:2338: a non-zero exit code makes wait() throw CommandExitError
// carrying exitCode, stdout and stderr.
test('non-zero exit raises CommandExitError', async () => {
  await assert.rejects(sbx.commands.run('echo partial; echo bad >&2; exit 3'), (e) => {
    assert.ok(e instanceof CommandExitError, `got ${e?.constructor?.name}: ${e?.message}`);
    assert.equal(e.exitCode, 3);
    assert.equal(e.stdout, 'partial\n');
    assert.equal(e.stderr, 'bad\n');
    return true;
  });
});

// index.mjs:4574 passes timeoutMs as the Connect deadline; a deadline_exceeded
// stream maps to TimeoutError (index.mjs:1485).
test('a command past timeoutMs raises TimeoutError', async () => {
  const t0 = Date.now();
  await assert.rejects(sbx.commands.run('sleep 30', { timeoutMs: 700 }), (e) => {
    assert.ok(e instanceof TimeoutError, `got ${e?.constructor?.name}: ${e?.message}`);
    return true;
  });
  assert.ok(Date.now() - t0 < 10000, 'the timeout ended the command early');
});

// index.mjs:4552 background: true returns the CommandHandle at once;
// 4436 list() returns the running processes with their pid and cmd/args;
// 4502 kill() sends SIGKILL and returns true; envd ends a signalled process
// with exit code -1 and "signal: killed" (infra process/handler/handler.go),
// so wait() throws CommandExitError; a second kill() finds no process
// (NotFound -> false, index.mjs:4515).
test('background handle: list, kill, wait', async () => {
  const h = await sbx.commands.run('sleep 60', { background: true });
  assert.ok(h.pid > 0);
  const procs = await sbx.commands.list();
  const mine = procs.find((p) => p.pid === h.pid);
  assert.ok(mine, 'the background process is listed');
  assert.equal(mine.cmd, '/bin/bash');
  assert.deepEqual(mine.args, ['-l', '-c', 'sleep 60']);
  assert.equal(await h.kill(), true);
  await assert.rejects(h.wait(), (e) => {
    assert.ok(e instanceof CommandExitError, `got ${e?.constructor?.name}: ${e?.message}`);
    assert.equal(e.exitCode, -1);
    assert.match(e.error, /signal: killed/);
    return true;
  });
  assert.equal(await sbx.commands.kill(h.pid), false);
  assert.ok(!(await sbx.commands.list()).some((p) => p.pid === h.pid));
});

// index.mjs:4529 connect(pid) attaches to a running process's stream
// (Process/Connect) and receives its later output and end event.
test('connect to a background command', async () => {
  const h = await sbx.commands.run('sleep 1; echo late', { background: true });
  await h.disconnect();
  const again = await sbx.commands.connect(h.pid);
  const r = await withTimeout(again.wait(), 15000, 'connected command did not end');
  assert.equal(r.stdout, 'late\n');
  assert.equal(r.exitCode, 0);
});

// index.mjs:4570 stdin: true keeps stdin open; 4455 sendStdin writes to it;
// 4481 closeStdin (envd >= 0.5.2, index.mjs:4427) sends EOF so `cat` exits.
test('sendStdin and closeStdin', async () => {
  const h = await sbx.commands.run('cat', { background: true, stdin: true });
  await h.sendStdin('hello ');
  await h.sendStdin('stdin\n');
  await h.closeStdin();
  const r = await withTimeout(h.wait(), 15000, 'cat did not end after closeStdin');
  assert.equal(r.stdout, 'hello stdin\n');
});

// Killing the sandbox cuts every stream to it: the connection drops
// (undici "terminated", index.mjs:1455-1477), the SDK probes /health, gets
// the edge's 502 (1553) and raises TimeoutError "The sandbox was killed ..."
// (index.mjs:1514-1516, called from CommandHandle 2527).
test('killing the sandbox while a command streams raises TimeoutError', async () => {
  const s = await Sandbox.create();
  const h = await s.commands.run('sleep 60', { background: true });
  await Sandbox.kill(s.sandboxId);
  await assert.rejects(withTimeout(h.wait(), 15000, 'stream did not end'), (e) => {
    assert.ok(e instanceof TimeoutError, `got ${e?.constructor?.name}: ${e?.message}`);
    assert.match(e.message, /sandbox was killed/);
    return true;
  });
});

// A command on a sandbox that is gone: the edge answers 502 (infra
// packages/shared/pkg/proxy/template/sandbox_not_found.go), Connect maps it
// to unavailable and handleProcessStartEvent raises SandboxNotFoundError
// (index.mjs:1604-1607).
test('a command on a killed sandbox raises SandboxNotFoundError', async () => {
  const s = await Sandbox.create();
  await s.kill();
  await assert.rejects(s.commands.run('echo hi'), (e) => {
    assert.ok(e instanceof SandboxNotFoundError, `got ${e?.constructor?.name}: ${e?.message}`);
    return true;
  });
});

// index.mjs:4268 pty.create starts "/bin/bash -i -l" (4279-4280) with
// pty{size} and TERM/LANG/LC_ALL set; output arrives as pty data to onData
// (2457, 2511); 4338 sendInput writes to the terminal; 4363 resize ->
// Process/Update
// (infra packages/envd/internal/services/process/update.go); the terminal
// echoes input and ends lines with CRLF (tty onlcr); bash's checkwinsize
// keeps COLUMNS/LINES current; `exit 5` ends it with exit code 5, so
// wait() throws CommandExitError (2338).
test('pty: create, sendInput, resize, exit', async () => {
  let out = '';
  const dec = new TextDecoder();
  const term = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { out += dec.decode(d, { stream: true }); }, timeoutMs: 30000 });
  const until = async (want) => {
    const t0 = Date.now();
    while (!out.includes(want)) {
      if (Date.now() - t0 > 10000) throw new Error(`no ${JSON.stringify(want)} in ${JSON.stringify(out)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const enc = new TextEncoder();
  await sbx.pty.sendInput(term.pid, enc.encode('cd /tmp && echo "$TERM"\r'));
  await until('xterm-256color\r\n');
  assert.ok(out.includes('cd /tmp && echo "$TERM"\r\n'), 'the terminal echoes the input');
  await sbx.pty.resize(term.pid, { cols: 100, rows: 30 });
  await sbx.pty.sendInput(term.pid, enc.encode('echo $COLUMNS $LINES; pwd\r'));
  await until('100 30\r\n/tmp\r\n');
  await sbx.pty.sendInput(term.pid, enc.encode('exit 5\r'));
  await assert.rejects(withTimeout(term.wait(), 15000, 'pty did not end'), (e) => {
    assert.ok(e instanceof CommandExitError, `got ${e?.constructor?.name}: ${e?.message}`);
    assert.equal(e.exitCode, 5);
    return true;
  });
});
