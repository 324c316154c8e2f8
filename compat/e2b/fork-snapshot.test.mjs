// Fork, snapshots, network update and the template alias lookup of the
// official E2B SDK (e2b@2.51.0) against the fake. Each check cites what the
// SDK does (compat/node_modules/e2b/dist/index.mjs line) or what the
// platform answers (e2b-dev/infra at 54693ff, file), never the fake.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { Sandbox, SandboxNotFoundError, Template } from 'e2b';
import { skipInNamespace, startFakeProvider, useFakeEnv } from '../lib/sandboxkit.mjs';

let fake;
before(async () => {
  fake = await startFakeProvider();
  useFakeEnv(fake.env);
});
after(async () => {
  await fake?.stop();
});

// index.mjs:5548 fork() -> 5489 Sandbox.fork -> 5099 forkSandbox: POST
// /sandboxes/{id}/fork, one Sandbox or Error per result. infra
// handlers/sandbox_fork.go: the source keeps running, untouched.
// No image of a namespace sandbox's files yet: a fork starts from the root
// filesystem.
const noImage = { skip: skipInNamespace('a fork or snapshot starts from the root filesystem, not a copy of its source (fakeprovider/doc.go)') };

test('fork copies the sandbox and leaves it running', noImage, async () => {
  const s = await Sandbox.create({ metadata: { role: 'source' } });
  try {
    await s.files.write('/home/user/state.txt', 'before fork');
    const forks = await s.fork({ count: 2 });
    assert.equal(forks.length, 2);
    try {
      for (const f of forks) {
        assert.ok(f instanceof Sandbox, `got ${f?.constructor?.name}: ${f?.message}`);
        assert.notEqual(f.sandboxId, s.sandboxId);
        assert.equal(await f.files.read('/home/user/state.txt'), 'before fork');
        assert.deepEqual((await f.getInfo()).metadata, { role: 'source' });
      }
      assert.ok(await s.isRunning());
    } finally {
      for (const f of forks) if (f instanceof Sandbox) await f.kill();
    }
  } finally {
    await s.kill();
  }
});

// index.mjs:5099 forkSandbox: 404 -> SandboxNotFoundError.
test('forking a killed sandbox raises SandboxNotFoundError', async () => {
  const s = await Sandbox.create();
  await s.kill();
  await assert.rejects(Sandbox.fork(s.sandboxId), (e) => {
    assert.ok(e instanceof SandboxNotFoundError, `got ${e?.constructor?.name}: ${e?.message}`);
    return true;
  });
});

// index.mjs:4996 createSnapshot (201 SnapshotInfo), 5238 SnapshotPaginator
// (GET /snapshots), Sandbox.create(snapshotId), 5032 deleteSnapshot
// (DELETE /templates/{id}: 204 -> true, 404 -> false). infra
// snapshot_template_create.go: a named snapshot is "<team>/<name>:default".
test('snapshots: create, list, create from, delete', noImage, async () => {
  const s = await Sandbox.create();
  const name = `snap-${Date.now().toString(36)}`;
  try {
    await s.files.write('/home/user/saved.txt', 'in the snapshot');
    const snap = await s.createSnapshot({ name });
    assert.match(snap.snapshotId, new RegExp(`/${name}:default$`));
    const listed = [];
    const pager = s.listSnapshots({ limit: 1 });
    while (pager.hasNext) listed.push(...(await pager.nextItems()).map((x) => x.snapshotId));
    assert.deepEqual(listed, [snap.snapshotId]);
    const child = await Sandbox.create(snap.snapshotId);
    try {
      assert.equal(await child.files.read('/home/user/saved.txt'), 'in the snapshot');
    } finally {
      await child.kill();
    }
    assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), true);
    assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), false);
  } finally {
    await s.kill();
  }
});

// index.mjs:5618 updateNetwork -> 4940 PUT /sandboxes/{id}/network (204;
// 404 -> SandboxNotFoundError); getInfo reports network (4835). infra
// sandbox_network_update.go replaces the egress rules as a whole.
test('updateNetwork replaces the egress rules that getInfo reports', async () => {
  const s = await Sandbox.create({ network: { denyOut: ['0.0.0.0/0'] } });
  try {
    await s.updateNetwork({ allowOut: ['8.8.8.8'] });
    const info = await s.getInfo();
    assert.deepEqual(info.network?.allowOut, ['8.8.8.8']);
    assert.ok(!info.network?.denyOut?.length);
  } finally {
    await s.kill();
  }
  await assert.rejects(Sandbox.updateNetwork(s.sandboxId, { allowOut: ['8.8.8.8'] }), SandboxNotFoundError);
});

// index.mjs:7074 Template.exists -> 6606 checkAliasExists: 403 -> true
// (another team's public template, infra handlers/template_alias.go),
// 404 -> false.
test('Template.exists is true for base and false for an unknown name', async () => {
  assert.equal(await Template.exists('base'), true);
  assert.equal(await Template.exists(`no-such-${Date.now().toString(36)}`), false);
});
