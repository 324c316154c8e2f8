// e2b 1.x (e2b@1.13.2, installed as the alias e2b1) against `sandboxkit
// fake-provider --e2b1 preload`. e2b 1.x reads neither E2B_API_URL nor
// E2B_SANDBOX_URL: it calls https://api.<E2B_DOMAIN> and
// https://<port>-<id>.<E2B_DOMAIN> (compat/node_modules/e2b1/dist/index.mjs
// ConnectionConfig: apiUrl; Sandbox.getHost). The fake's Node preload,
// loaded through the NODE_OPTIONS it prints, redirects those fetches. The
// script runs in a child Node with that environment, as a server would.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { fakeExecArgs, sandboxkitBin, withTimeout } from '../lib/sandboxkit.mjs';

let fake;
let env;
before(async () => {
  fake = spawn(sandboxkitBin(), ['fake-provider', '--addr', '127.0.0.1:0', ...fakeExecArgs(), '--e2b1', 'preload'], { stdio: ['ignore', 'pipe', 'pipe'] });
  env = {};
  const lines = createInterface({ input: fake.stdout });
  await withTimeout(new Promise((resolve, reject) => {
    lines.on('line', (line) => {
      const m = /^([A-Z0-9_]+)=(.*)$/.exec(line);
      if (m) env[m[1]] = m[2];
      if (env.E2B_API_URL && env.NODE_OPTIONS) resolve();
    });
    fake.once('exit', (code) => reject(new Error(`fake-provider exited with ${code}`)));
  }), 15000, 'fake-provider did not print its environment');
});
after(async () => {
  if (fake && fake.exitCode === null) {
    fake.kill('SIGTERM');
    await once(fake, 'exit');
  }
});

// The script a 1.x server would run: every call goes through the SDK.
const script = `
import { Sandbox } from 'e2b1';
const out = {};
const sbx = await Sandbox.create({ timeoutMs: 60000 });
out.id = sbx.sandboxId;
out.stdout = (await sbx.commands.run('echo hello-1x')).stdout;
await sbx.files.write('/home/user/one.txt', 'written by 1.x');
out.read = await sbx.files.read('/home/user/one.txt');
const again = await Sandbox.connect(sbx.sandboxId);
out.connected = (await again.commands.run('cat /home/user/one.txt')).stdout;
out.listed = (await Sandbox.list()).map((s) => s.sandboxId);
await sbx.kill();
out.afterKill = (await Sandbox.list()).length;
console.log(JSON.stringify(out));
`;

test('e2b 1.13.2 through the Node preload: create, commands, files, connect, list, kill', async () => {
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, ...env },
    cwd: new URL('..', import.meta.url).pathname,
    timeout: 60000,
  });
  const out = JSON.parse(stdout.trim().split('\n').pop());
  // 1.13.2 returns the platform's sandboxID as is (index.mjs createSandbox).
  assert.match(out.id, /^[a-z0-9]+$/);
  assert.equal(out.stdout, 'hello-1x\n');
  assert.equal(out.read, 'written by 1.x');
  // connect is GET /sandboxes/{id} (index.mjs Sandbox.connect -> getInfo),
  // and reaches the same sandbox.
  assert.equal(out.connected, 'written by 1.x');
  assert.deepEqual(out.listed, [out.id]);
  assert.equal(out.afterKill, 0);
});
