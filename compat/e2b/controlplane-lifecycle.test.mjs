// The official E2B JS SDK (e2b@2.51.0) against `sandboxkit fake-provider`:
// pause and resume, isRunning, metrics, auto-pause, and the error classes
// the SDK must raise. Every check asserts what the SDK does and the platform
// answers, citing compat/node_modules/e2b/dist/index.mjs or index.d.ts (the
// bundled OpenAPI types) by line, or e2b-dev/infra; never the fake.
import { test, after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import {
  Sandbox, SandboxError, SandboxNotFoundError, NotFoundError, TimeoutError,
  AuthenticationError, InvalidArgumentError, RateLimitError,
} from 'e2b';
import { startFakeProvider, useFakeEnv } from '../lib/sandboxkit.mjs';

let fake;
before(async () => {
  fake = await startFakeProvider();
  useFakeEnv(fake.env);
});
after(async () => { await fake?.stop(); });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A control-plane request with the fake's key, as the SDK sends it (index.mjs:1090 X-API-KEY). */
function api(method, path, body) {
  return fetch(fake.env.E2B_API_URL + path, {
    method,
    headers: { 'X-API-KEY': fake.env.E2B_API_KEY, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
}

describe('pause and resume', () => {
  test('pause gives true, then false; the sandbox is listed as paused; connect resumes it', async () => {
    const sbx = await Sandbox.create({ timeoutMs: 120_000, metadata: { suite: 'pause' } });
    try {
      await sbx.files.write('/home/user/kept.txt', 'still here');
      // index.mjs:4967-4976 POST /sandboxes/{id}/pause: 204 -> true, 409 (not
      // running) -> false (index.d.ts:429 responses 204/404/409).
      assert.equal(await sbx.pause(), true);
      assert.equal(await sbx.pause(), false);
      assert.equal(await Sandbox.pause(sbx.sandboxId), false);
      assert.equal((await sbx.getInfo()).state, 'paused');
      // A paused sandbox's envd is not reachable: isRunning is false
      // (index.mjs:5590, the edge answers 502).
      assert.equal(await sbx.isRunning(), false);
      // Paused sandboxes show in state=paused lists, not in running ones
      // (index.d.ts SandboxState "running" | "paused").
      const paused = await Sandbox.list({ query: { state: ['paused'], metadata: { suite: 'pause' } } }).nextItems();
      assert.deepEqual(paused.map((s) => s.sandboxId), [sbx.sandboxId]);
      assert.deepEqual(await Sandbox.list({ query: { state: ['running'], metadata: { suite: 'pause' } } }).nextItems(), []);
      // connect resumes a paused sandbox (index.mjs:5424 "If the sandbox is
      // paused, it will be automatically resumed"), its files intact.
      const resumed = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 60_000 });
      assert.equal((await resumed.getInfo()).state, 'running');
      assert.equal(await resumed.isRunning(), true);
      assert.equal(await resumed.files.read('/home/user/kept.txt'), 'still here');
    } finally {
      await sbx.kill();
    }
  });

  test('pausing an unknown sandbox: SandboxNotFoundError', async () => {
    // index.mjs:4972: a 404 becomes SandboxNotFoundError.
    await assert.rejects(Sandbox.pause('inotthereatall0000000'), SandboxNotFoundError);
  });

  test('onTimeout "pause" pauses the sandbox at its timeout instead of killing it', async () => {
    // index.mjs:5071 autoPause: true for lifecycle.onTimeout "pause";
    // index.d.ts:2389 NewSandboxV2.autoPause "Automatically pauses the
    // sandbox after the timeout".
    const sbx = await Sandbox.create({ timeoutMs: 1_000, lifecycle: { onTimeout: 'pause' } });
    try {
      await sleep(2_000);
      const info = await Sandbox.getInfo(sbx.sandboxId);
      assert.equal(info.state, 'paused');
      assert.deepEqual(info.lifecycle, { onTimeout: 'pause', autoResume: false });
    } finally {
      await Sandbox.kill(sbx.sandboxId);
    }
  });

  test('without it, the timeout kills the sandbox', async () => {
    // index.d.ts:2389 autoPause "@default false": at its timeout the sandbox
    // is gone, so getInfo raises SandboxNotFoundError (index.mjs:4819).
    const sbx = await Sandbox.create({ timeoutMs: 1_000 });
    await sleep(2_000);
    await assert.rejects(Sandbox.getInfo(sbx.sandboxId), SandboxNotFoundError);
    assert.equal(await Sandbox.kill(sbx.sandboxId), false);
  });
});

describe('metrics', () => {
  test('a live sandbox answers a list of SandboxMetric, not SandboxNotFoundError', async () => {
    // index.mjs:4880-4898 GET /sandboxes/{id}/metrics maps each SandboxMetric
    // (index.d.ts:2610); a 404 would be SandboxNotFoundError.
    const sbx = await Sandbox.create({ timeoutMs: 60_000 });
    try {
      const metrics = await sbx.getMetrics();
      assert.ok(Array.isArray(metrics));
      for (const m of metrics) {
        assert.ok(m.timestamp instanceof Date && !Number.isNaN(m.timestamp.getTime()));
        for (const k of ['cpuUsedPct', 'cpuCount', 'memUsed', 'memTotal', 'memCache', 'diskUsed', 'diskTotal']) {
          assert.equal(typeof m[k], 'number', k);
        }
      }
      // start/end are Unix seconds (index.mjs:4878-4879); a window in the
      // past holds no sample of a sandbox started now.
      assert.deepEqual(await Sandbox.getMetrics(sbx.sandboxId, { end: new Date(Date.now() - 3_600_000) }), []);
    } finally {
      await sbx.kill();
    }
  });

  test('of an unknown sandbox: SandboxNotFoundError', async () => {
    await assert.rejects(Sandbox.getMetrics('inotthereatall0000000'), SandboxNotFoundError);
  });
});

describe('error classes', () => {
  test('a wrong API key: AuthenticationError', async () => {
    // index.mjs:1053-1056: a 401 becomes AuthenticationError; the platform
    // answers 401 for an unknown key (e2b-dev/infra spec/openapi.yml 401).
    const apiKey = 'e2b_' + '0'.repeat(40);
    await assert.rejects(Sandbox.create({ apiKey }), AuthenticationError);
    await assert.rejects(Sandbox.list({ apiKey }).nextItems(), AuthenticationError);
    await assert.rejects(Sandbox.getInfo('inotthereatall0000000', { apiKey }), AuthenticationError);
  });

  test('an envd call on a killed sandbox: TimeoutError', async () => {
    // index.mjs:1540 an envd 502 becomes TimeoutError (formatSandboxTimeoutError,
    // index.mjs:587): the edge answers 502 for a sandbox that is gone.
    const sbx = await Sandbox.create({ timeoutMs: 60_000 });
    await sbx.kill();
    await assert.rejects(sbx.files.read('/home/user/x'), TimeoutError);
  });

  test('lifecycle options the platform cannot honour: InvalidArgumentError before any call', async () => {
    // index.mjs:5054-5059: checked by the SDK itself.
    await assert.rejects(Sandbox.create({ lifecycle: { onTimeout: 'hibernate' } }), InvalidArgumentError);
    await assert.rejects(Sandbox.create({ lifecycle: { onTimeout: 'kill', autoResume: true } }), InvalidArgumentError);
  });

  test('a timeout above the maximum: a 400 SandboxError with the platform message, not NotFoundError', async () => {
    // index.mjs:1065-1066 any other status is SandboxError("<code>: <message>")
    // with statusCode; the message is the platform's own (e2b-dev/infra
    // packages/api/internal/handlers, create and connect: "Timeout cannot be
    // greater than <N> hours"), with nothing appended.
    await assert.rejects(Sandbox.create({ timeoutMs: 25 * 3_600_000 }), (err) => {
      assert.ok(err instanceof SandboxError);
      assert.ok(!(err instanceof NotFoundError));
      assert.equal(err.statusCode, 400);
      assert.equal(err.message, '400: Timeout cannot be greater than 24 hours');
      return true;
    });
  });

  test('an unknown template: 404 SandboxError with the platform message', async () => {
    // e2b-dev/infra packages/api/internal/cache/templates/errors.go:
    // "template '<id>' not found"; create maps a 404 like any status
    // (index.mjs:5085 handleApiError).
    await assert.rejects(Sandbox.create('no-such-template'), (err) => {
      assert.ok(err instanceof SandboxError);
      assert.equal(err.statusCode, 404);
      assert.equal(err.message, "404: template 'no-such-template' not found");
      return true;
    });
  });
});

describe('snapshots, fork and network update', () => {
  test('are served on a live sandbox and leave it running', async () => {
    // index.mjs:4996/5099/4940: createSnapshot, fork and updateNetwork on a
    // running sandbox succeed (infra handlers/snapshot_template_create.go,
    // sandbox_fork.go, sandbox_network_update.go); fork-snapshot.test.mjs
    // checks what they copy and report.
    const sbx = await Sandbox.create({ timeoutMs: 60_000 });
    try {
      const snap = await sbx.createSnapshot();
      assert.match(snap.snapshotId, /:default$/);
      const [fork] = await sbx.fork();
      assert.ok(fork instanceof Sandbox, String(fork));
      await fork.kill();
      await sbx.updateNetwork({ allowOut: ['1.1.1.1'] });
      assert.ok(Array.isArray(await Sandbox.listSnapshots().nextItems()));
      // deleteSnapshot reads a 404 as false (index.mjs:5041).
      assert.equal(await Sandbox.deleteSnapshot('no-such-snapshot'), false);
      assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), true);
      assert.equal(await sbx.isRunning(), true);
    } finally {
      await sbx.kill();
    }
  });
});

describe('rate limit', () => {
  test('a 429 carries Retry-After; with retries off the SDK raises RateLimitError', async () => {
    const limited = await startFakeProvider(['--sandbox-limit', '1']);
    const opts = { apiKey: limited.env.E2B_API_KEY, apiUrl: limited.env.E2B_API_URL, sandboxUrl: limited.env.E2B_SANDBOX_URL, retries: 0 };
    try {
      const first = await Sandbox.create({ ...opts, timeoutMs: 60_000 });
      // index.mjs:1026-1046 withRateLimitRetry retries only a 429 carrying
      // Retry-After (e2b-dev/infra packages/api/internal/middleware/ratelimit
      // sets it).
      const res = await fetch(limited.env.E2B_API_URL + '/v2/sandboxes', {
        method: 'POST',
        headers: { 'X-API-KEY': limited.env.E2B_API_KEY, 'Content-Type': 'application/json' },
        body: JSON.stringify({ templateID: 'base' }),
      });
      assert.equal(res.status, 429);
      assert.match(res.headers.get('retry-after') ?? '', /^\d+$/);
      await res.body?.cancel();
      // index.mjs:1057-1060: 429 -> RateLimitError.
      await assert.rejects(Sandbox.create({ ...opts }), RateLimitError);
      await first.kill();
      // With room again, the SDK's own retry path is not needed.
      const second = await Sandbox.create({ ...opts, timeoutMs: 60_000 });
      await second.kill();
    } finally {
      await limited.stop();
    }
  });
});

describe('wire details', () => {
  test('the deprecated GET /sandboxes lists running sandboxes', async () => {
    // e2b-dev/infra spec/openapi.yml GET /sandboxes (deprecated): running
    // sandboxes as ListedSandbox, filtered by metadata.
    const sbx = await Sandbox.create({ timeoutMs: 60_000, metadata: { legacy: 'yes' } });
    try {
      const res = await api('GET', '/sandboxes?metadata=' + encodeURIComponent('legacy=yes'));
      assert.equal(res.status, 200);
      const items = await res.json();
      assert.deepEqual(items.map((s) => s.sandboxID), [sbx.sandboxId]);
      assert.deepEqual(items[0].metadata, { legacy: 'yes' });
      assert.equal(items[0].state, 'running');
    } finally {
      await sbx.kill();
    }
  });

  test('v1 create and connect keep v1 semantics (the Python SDK 2.45 routes)', async () => {
    // e2b-dev/infra spec/openapi.yml POST /sandboxes: NewSandbox.timeout
    // default 15, secure opt-in; POST /sandboxes/{id}/connect requires
    // timeout (ConnectSandbox).
    let res = await api('POST', '/sandboxes', { templateID: 'base' });
    assert.equal(res.status, 201);
    const created = await res.json();
    assert.equal(created.envdAccessToken, undefined);
    try {
      const info = await Sandbox.getInfo(created.sandboxID);
      assert.equal((info.endAt.getTime() - info.startedAt.getTime()) / 1000, 15);
      res = await api('POST', `/sandboxes/${created.sandboxID}/connect`, {});
      assert.equal(res.status, 400);
      await res.body?.cancel();
      res = await api('POST', `/sandboxes/${created.sandboxID}/connect`, { timeout: 60 });
      assert.equal(res.status, 200);
      await res.body?.cancel();
    } finally {
      await Sandbox.kill(created.sandboxID);
    }
  });
});
