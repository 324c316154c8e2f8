// Smoke check of the harness: the official E2B SDK reaches the fake's list
// route. e2b@2.51.0 dist/index.mjs: Sandbox.list -> GET /v2/sandboxes.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { Sandbox } from 'e2b';
import { startFakeProvider, useFakeEnv } from '../lib/sandboxkit.mjs';

let fake;
before(async () => {
  fake = await startFakeProvider();
  useFakeEnv(fake.env);
});
after(async () => { await fake?.stop(); });

test('Sandbox.list reaches the fake and pages an empty account', async () => {
  const page = await Sandbox.list().nextItems();
  assert.deepEqual(page, []);
});
