// The official E2B JS SDK (e2b@2.51.0) against `sandboxkit fake-provider`:
// create, connect, getInfo, list, setTimeout and kill. Every check asserts
// what the SDK sends and the platform answers, citing the SDK's
// compat/node_modules/e2b/dist/index.mjs (code) or index.d.ts (the bundled
// OpenAPI types) line, or e2b-dev/infra; never what the fake happens to do.
import { test, after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import { Sandbox, SandboxNotFoundError, NotFoundError } from 'e2b';
import { startFakeProvider, useFakeEnv } from '../lib/sandboxkit.mjs';

let fake;
before(async () => {
  fake = await startFakeProvider();
  useFakeEnv(fake.env);
});
after(async () => { await fake?.stop(); });

const seconds = (info) => (info.endAt.getTime() - info.startedAt.getTime()) / 1000;

describe('create', () => {
  test('with envs, metadata and timeout: the sandbox has them', async () => {
    // index.mjs:5081 POST /v2/sandboxes with {templateID, metadata, envVars,
    // timeout: Math.ceil(timeoutMs/1000)} (index.mjs:147 timeoutToSeconds).
    const metadata = { owner: 'compat', 'a b': 'c&d' };
    const sbx = await Sandbox.create({ envs: { GREETING: 'hello' }, metadata, timeoutMs: 120_000 });
    try {
      assert.match(sbx.sandboxId, /^[a-z0-9]+$/);
      const info = await sbx.getInfo();
      // Metadata comes back exactly as it was sent (index.d.ts:2479
      // SandboxDetail.metadata is the SandboxMetadata given on create).
      assert.deepEqual(info.metadata, metadata);
      // endAt = startedAt + timeout (index.d.ts:2389 NewSandboxV2.timeout:
      // "Time to live for the sandbox in seconds").
      assert.equal(seconds(info), 120);
      // The environment reaches the sandbox's processes, and nothing else is
      // added to it (index.d.ts NewSandboxV2.envVars).
      const r = await sbx.commands.run('echo "$GREETING"; env');
      assert.equal(r.stdout.split('\n')[0], 'hello');
      assert.doesNotMatch(r.stdout, /CANARY/i);
    } finally {
      await sbx.kill();
    }
  });

  test('without a timeout: the platform default, 300 s', async () => {
    // index.mjs:5067 timeout is undefined when timeoutMs is not given, so the
    // body has none; index.d.ts:2389 NewSandboxV2.timeout "@default 300".
    const sbx = await Sandbox.create();
    try {
      assert.equal(seconds(await sbx.getInfo()), 300);
    } finally {
      await sbx.kill();
    }
  });

  test('v2 sandboxes are secured: the answer carries an envdAccessToken the daemon enforces', async () => {
    // index.d.ts:2389 NewSandboxV2: "All system communication with the sandbox
    // is always secured" (no `secure` field); index.mjs:5081-5095 keeps
    // envdAccessToken and sends it as X-Access-Token on envd calls.
    const sbx = await Sandbox.create({ timeoutMs: 60_000 });
    try {
      const info = await Sandbox.getInfo(sbx.sandboxId);
      assert.equal(info.state, 'running');
      // The SDK's own health and command calls carry the token and succeed.
      assert.equal(await sbx.isRunning(), true);
      assert.equal((await sbx.commands.run('echo ok')).stdout.trim(), 'ok');
      // A call without it is refused by envd (e2b-dev/infra
      // packages/envd/internal/api/auth.go: 401 without a valid token).
      const res = await fetch(`${fake.env.E2B_SANDBOX_URL}/process.Process/List`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983' },
        body: '{}',
      });
      assert.equal(res.status, 401);
      await res.body?.cancel();
    } finally {
      await sbx.kill();
    }
  });

  test('lifecycle, network, volumeMounts and allowInternetAccess are kept and reported', async () => {
    // index.mjs:5062-5076 sends autoPause, autoResume {enabled}, network,
    // allow_internet_access, volumeMounts [{name, path}]; index.mjs:4815-4855
    // getInfo reads lifecycle, network, volumeMounts, allowInternetAccess
    // from SandboxDetail (index.d.ts:2479).
    const sbx = await Sandbox.create({
      timeoutMs: 60_000,
      lifecycle: { onTimeout: 'pause', autoResume: true },
      network: { allowOut: ['1.1.1.1'], denyOut: ['0.0.0.0/0'] },
      allowInternetAccess: false,
      volumeMounts: { '/mnt/data': 'vol-compat' },
    });
    try {
      const info = await sbx.getInfo();
      assert.deepEqual(info.lifecycle, { onTimeout: 'pause', autoResume: true });
      assert.deepEqual(info.network.allowOut, ['1.1.1.1']);
      assert.deepEqual(info.network.denyOut, ['0.0.0.0/0']);
      assert.equal(info.allowInternetAccess, false);
      assert.deepEqual(info.volumeMounts, [{ name: 'vol-compat', path: '/mnt/data' }]);
    } finally {
      await sbx.kill();
    }
  });
});

describe('getInfo', () => {
  test('reports every field of SandboxDetail the SDK maps', async () => {
    const sbx = await Sandbox.create({ timeoutMs: 60_000, metadata: { k: 'v' } });
    try {
      const info = await sbx.getInfo();
      // index.mjs:4823-4855: sandboxId, templateId, name (alias), metadata,
      // envdVersion, startedAt, endAt, state, cpuCount, memoryMB, lifecycle,
      // sandboxDomain (domain || undefined), volumeMounts (default []).
      assert.equal(info.sandboxId, sbx.sandboxId);
      assert.match(info.templateId, /^[a-z0-9]+$/);
      assert.equal(info.name, 'base');
      assert.equal(info.state, 'running');
      assert.ok(Number.isInteger(info.cpuCount) && info.cpuCount > 0);
      assert.ok(Number.isInteger(info.memoryMB) && info.memoryMB > 0);
      assert.match(info.envdVersion, /^\d+\.\d+\.\d+/);
      assert.ok(!Number.isNaN(info.startedAt.getTime()) && !Number.isNaN(info.endAt.getTime()));
      // lifecycle is always set on a running sandbox; without lifecycle
      // options the SDK asks for none: onTimeout kill, no auto-resume
      // (index.mjs:5051 onTimeout defaults to "kill"; index.d.ts:2565).
      assert.deepEqual(info.lifecycle, { onTimeout: 'kill', autoResume: false });
      // domain is null outside a custom cluster (e2b-dev/infra
      // packages/api/internal/handlers/sandbox_get.go), so sandboxDomain is
      // undefined.
      assert.equal(info.sandboxDomain, undefined);
      assert.deepEqual(info.volumeMounts, []);
      assert.equal(info.network, undefined);
      assert.deepEqual(info.metadata, { k: 'v' });
    } finally {
      await sbx.kill();
    }
  });

  test('of an unknown sandbox: SandboxNotFoundError', async () => {
    // index.mjs:4819: a 404 becomes SandboxNotFoundError (a NotFoundError).
    await assert.rejects(Sandbox.getInfo('inotthereatall0000000'), (err) => {
      assert.ok(err instanceof SandboxNotFoundError);
      assert.ok(err instanceof NotFoundError);
      return true;
    });
  });
});

describe('connect', () => {
  test('a bare Sandbox.connect(id) reaches a running sandbox and never shortens it', async () => {
    // index.mjs:5142 POST /v2/sandboxes/{id}/connect with body {} when no
    // timeoutMs is given; index.d.ts:2219 ConnectSandboxV2.timeout
    // "@default 300". A running sandbox keeps a longer lifetime.
    const sbx = await Sandbox.create({ timeoutMs: 3_600_000 });
    try {
      const before = await sbx.getInfo();
      const same = await Sandbox.connect(sbx.sandboxId);
      assert.equal(same.sandboxId, sbx.sandboxId);
      assert.equal((await same.commands.run('echo connected')).stdout.trim(), 'connected');
      const after = await sbx.getInfo();
      assert.equal(after.endAt.getTime(), before.endAt.getTime());
    } finally {
      await sbx.kill();
    }
  });

  test('with a longer timeout extends the lifetime; instance connect works too', async () => {
    const sbx = await Sandbox.create({ timeoutMs: 30_000 });
    try {
      await Sandbox.connect(sbx.sandboxId, { timeoutMs: 600_000 });
      const info = await sbx.getInfo();
      const left = (info.endAt.getTime() - Date.now()) / 1000;
      assert.ok(left > 590 && left <= 600, `${left} s left, want about 600`);
      // index.mjs:5514 instance connect calls the same route.
      assert.equal(await sbx.connect(), sbx);
    } finally {
      await sbx.kill();
    }
  });

  test('to an unknown sandbox: SandboxNotFoundError', async () => {
    // index.mjs:5150: a 404 becomes SandboxNotFoundError.
    await assert.rejects(Sandbox.connect('inotthereatall0000000'), SandboxNotFoundError);
  });
});

describe('list', () => {
  test('filters by state and metadata and pages with nextToken', async () => {
    const tag = `run-${process.pid}`;
    const made = [];
    try {
      for (let i = 0; i < 5; i++) {
        made.push(await Sandbox.create({ timeoutMs: 120_000, metadata: { tag, n: String(i) } }));
      }
      // index.mjs:5186-5201: metadata is URLSearchParams of encoded pairs,
      // state is sent as given, limit pages; index.mjs:2584 the paginator
      // follows x-next-token until it is absent.
      const paginator = Sandbox.list({ limit: 2, query: { state: ['running'], metadata: { tag } } });
      const seen = [];
      let pages = 0;
      while (paginator.hasNext) {
        const items = await paginator.nextItems();
        assert.ok(items.length <= 2);
        seen.push(...items);
        pages++;
      }
      assert.equal(pages, 3);
      assert.deepEqual(seen.map((s) => s.sandboxId).sort(), made.map((s) => s.sandboxId).sort());
      // Newest first by default (index.d.ts OrderDirection "@default desc").
      assert.deepEqual(seen.map((s) => s.metadata.n), ['4', '3', '2', '1', '0']);
      for (const s of seen) {
        assert.equal(s.state, 'running');
        assert.deepEqual(s.metadata, { tag, n: s.metadata.n });
      }
      // One pair that only one sandbox has.
      const one = await Sandbox.list({ query: { metadata: { tag, n: '3' } } }).nextItems();
      assert.deepEqual(one.map((s) => s.sandboxId), [made[3].sandboxId]);
      // No paused sandbox carries the tag.
      assert.deepEqual(await Sandbox.list({ query: { state: ['paused'], metadata: { tag } } }).nextItems(), []);
      // order asc (index.mjs:5199) reverses it.
      const asc = await Sandbox.list({ order: 'asc', query: { metadata: { tag } } }).nextItems();
      assert.deepEqual(asc.map((s) => s.metadata.n), ['0', '1', '2', '3', '4']);
      // startedAfter in the future matches nothing (index.mjs:5197 toISOString).
      const later = await Sandbox.list({ query: { metadata: { tag }, startedAfter: new Date(Date.now() + 3_600_000) } }).nextItems();
      assert.deepEqual(later, []);
    } finally {
      await Promise.all(made.map((s) => s.kill()));
    }
  });
});

describe('setTimeout', () => {
  test('instance and static set the remaining lifetime, shorter or longer', async () => {
    // index.mjs:4921 POST /sandboxes/{id}/timeout {timeout}: endAt = now + t,
    // which may shorten the sandbox (index.mjs:4908 "can extend or reduce").
    const sbx = await Sandbox.create({ timeoutMs: 600_000 });
    try {
      await sbx.setTimeout(30_000);
      let left = ((await sbx.getInfo()).endAt.getTime() - Date.now()) / 1000;
      assert.ok(left > 25 && left <= 30, `${left} s left after setTimeout(30 s)`);
      await Sandbox.setTimeout(sbx.sandboxId, 900_000);
      left = ((await sbx.getInfo()).endAt.getTime() - Date.now()) / 1000;
      assert.ok(left > 895 && left <= 900, `${left} s left after setTimeout(900 s)`);
    } finally {
      await sbx.kill();
    }
  });

  test('on an unknown sandbox: SandboxNotFoundError', async () => {
    // index.mjs:4926: a 404 becomes SandboxNotFoundError.
    await assert.rejects(Sandbox.setTimeout('inotthereatall0000000', 10_000), SandboxNotFoundError);
  });
});

describe('kill', () => {
  test('instance and static: true once, false when the sandbox is gone', async () => {
    // index.mjs:4793-4803 DELETE /sandboxes/{id}: 204 -> true, 404 -> false.
    const a = await Sandbox.create({ timeoutMs: 60_000 });
    const b = await Sandbox.create({ timeoutMs: 60_000 });
    assert.equal(await a.kill(), true);
    assert.equal(await a.kill(), false);
    assert.equal(await Sandbox.kill(b.sandboxId), true);
    assert.equal(await Sandbox.kill(b.sandboxId), false);
    await assert.rejects(b.getInfo(), SandboxNotFoundError);
    // A killed sandbox is not running: its envd answers 502 at the edge,
    // which isRunning reports as false (index.mjs:5590).
    assert.equal(await a.isRunning(), false);
  });
});
