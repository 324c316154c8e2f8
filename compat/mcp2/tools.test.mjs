// The official MCP TypeScript client v2 (@modelcontextprotocol/client 2.4.0)
// against `sandboxkit serve --fake`, in its three negotiation modes (default,
// 'auto', pinned to 2026-07-28) over stdio and Streamable HTTP. In each mode
// it lists the tools and calls every listed tool in success and error paths;
// every call must come back as a result, never a thrown error, and every
// error must be readable: the contract's error JSON (ERR-2) with the category,
// field or code the contract names.
//
// What the client does, from its own files (node_modules/@modelcontextprotocol/client):
// - dist/client-BTIWJvaF.d.mts, ClientOptions.versionNegotiation: the default
//   is 'legacy', "the plain 2025 sequence"; 'auto' probes with
//   `server/discover` and "definitive modern evidence selects the modern era";
//   a pin "must offer it. No fallback". getProtocolEra() is 'modern' or
//   'legacy', getNegotiatedProtocolVersion() the revision.
// - dist/public-CvV4ZHkX.mjs, negotiateStdioViaSibling: on stdio the probe
//   "runs on a short-lived sibling spawned from the same parameters; the
//   caller's transport starts exactly once", and the sibling "is reaped
//   before this resolves" (dist/stdio.mjs _dispose: stdin end, SIGTERM, and
//   SIGKILL after 1 s).
//
// What a server must do, from the specification
// (modelcontextprotocol/modelcontextprotocol, docs/specification/2026-07-28/):
// - server/discover.mdx: servers MUST implement `server/discover`; on stdio
//   it is the client's probe.
// - basic/transports/streamable-http.mdx: modern traffic is POST, the
//   MCP-Protocol-Version header matches `_meta`, and there is no
//   Mcp-Session-Id.
// - basic/index.mdx §Statelessness: servers MUST NOT rely on prior requests
//   over the same connection (the contract's MODERN-1: no default sandbox).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { SdkHttpError, StreamableHTTPClientTransport, UnsupportedProtocolVersionError } from '@modelcontextprotocol/client';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loopbackURL, startHTTPServer } from '../lib/mcp.mjs';
import { resultChecks } from '../lib/results.mjs';
import { startFakeProvider } from '../lib/sandboxkit.mjs';
import { MODERN, alive, connectHTTP2, connectStdio2, newClient2 } from '../lib/mcp2.mjs';

// The 2025 revisions a legacy `initialize` negotiates (TOOLS-4).
const LEGACY_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'];

const { ok, fails } = resultChecks('the official client v2');

/** MODERN-1: no default sandbox, and the recovery names create_sandbox. */
async function noDefault(client, name, args) {
  const error = await fails(client, name, args, 'invalid_argument', { code: 'no_default_sandbox' });
  assert.match(error.recovery, /create_sandbox/, `${name}: the no_default_sandbox recovery names create_sandbox (MODERN-1)`);
}

/** HANDLE-3: a killed handle is not_found, and the text says it expired, was killed or is unknown. */
async function goneHandle(client, name, args, era) {
  const error = await fails(client, name, args, 'not_found');
  if (era === 'modern') {
    assert.match(error.recovery, /expired|killed|unknown/i, `${name}: a gone handle's text says why (HANDLE-3)`);
  }
}

/** Lifecycle tools with and without a sandbox, and the era's default rules. */
async function lifecycle(client, era, track) {
  assert.ok(Array.isArray((await ok(client, track('list_sandboxes'), {})).sandboxes));
  await fails(client, 'list_sandboxes', { limit: 0 }, 'invalid_argument', { field: 'limit' });
  await fails(client, track('get_sandbox'), {}, 'invalid_argument', { code: 'no_default_sandbox' });
  await fails(client, track('create_sandbox'), { cpu: 0 }, 'invalid_argument', { field: 'cpu' });
  const id = (await ok(client, 'create_sandbox', {})).sandbox_id;
  assert.equal(typeof id, 'string');
  if (era === 'modern') {
    // MODERN-1: whatever earlier requests did on this connection.
    await noDefault(client, 'get_sandbox', {});
    await noDefault(client, 'run_command', { command: 'echo implicit' });
    await noDefault(client, 'write_file', { path: '/home/user/x.txt', content: 'x' });
  } else {
    // SESSION-2: the session's sandbox is its default.
    assert.equal((await ok(client, 'get_sandbox', {})).sandbox_id, id);
  }
  assert.equal((await ok(client, 'get_sandbox', { sandbox_id: id })).sandbox_id, id);
  await fails(client, 'get_sandbox', { sandbox_id: 'nosuchsandbox0000' }, 'not_found');
  assert.deepEqual(await ok(client, track('set_sandbox_timeout'), { sandbox_id: id, timeout: 600 }),
    { success: true, sandbox_id: id, timeout: 600 });
  await fails(client, 'set_sandbox_timeout', { sandbox_id: id, timeout: true }, 'invalid_argument', { field: 'timeout' });
  assert.ok((await ok(client, 'list_sandboxes', { limit: 100 })).sandboxes.some((s) => s.sandbox_id === id));
  return id;
}

/** Execution and files on one sandbox, by explicit sandbox_id (valid in both eras). */
async function executionAndFiles(client, id, track) {
  const echo = await ok(client, track('run_command'), { sandbox_id: id, command: 'echo hello' });
  assert.equal(echo.stdout, 'hello\n');
  assert.equal(echo.exit_code, 0);
  assert.equal((await ok(client, 'run_command', { sandbox_id: id, command: 'exit 3' })).exit_code, 3);
  await fails(client, 'run_command', { sandbox_id: id, command: 'sleep 30', timeout: 1 }, 'timeout');
  await fails(client, 'run_command', { sandbox_id: id, command: 'true', timeout: true }, 'invalid_argument', { field: 'timeout' });
  assert.equal((await ok(client, track('run_code'), { sandbox_id: id, code: 'echo code', language: 'bash' })).stdout, 'code\n');
  await fails(client, 'run_code', { sandbox_id: id, code: 'x', language: 'cobol' }, 'invalid_argument', { field: 'language' });

  const dir = '/home/user/compat2';
  assert.equal((await ok(client, track('write_file'), { sandbox_id: id, path: `${dir}/a.txt`, content: 'héllo' })).bytes_written, 6);
  assert.equal((await ok(client, track('read_file'), { sandbox_id: id, path: `${dir}/a.txt` })).content, 'héllo');
  await fails(client, 'read_file', { sandbox_id: id, path: `${dir}/missing.txt` }, 'not_found');
  await fails(client, 'write_file', { sandbox_id: id, path: `${dir}/b.txt` }, 'invalid_argument', { field: 'content' });
  const listed = await ok(client, track('list_files'), { sandbox_id: id, path: dir });
  assert.ok(listed.entries.some((e) => e.name === 'a.txt' && e.type === 'file'));
  await fails(client, 'list_files', { sandbox_id: id, path: '/home/user/no-such-dir' }, 'not_found');

  const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  const up = await ok(client, track('upload_file'), { sandbox_id: id, path: `${dir}/b.bin`, data_base64: bytes.toString('base64') });
  assert.equal(up.size, 256);
  assert.equal(up.sha256, createHash('sha256').update(bytes).digest('hex'));
  await fails(client, 'upload_file', { sandbox_id: id, path: `${dir}/c.bin`, data_base64: 'abc' }, 'invalid_argument', { field: 'data_base64' });
  assert.equal((await ok(client, track('download_file'), { sandbox_id: id, path: `${dir}/b.bin` })).data_base64, bytes.toString('base64'));
  await fails(client, 'download_file', { sandbox_id: id, path: `${dir}/missing.bin` }, 'not_found');
}

/** Background commands; returns a running command's ID. */
async function background(client, id, track) {
  const bg = await ok(client, track('start_background_command'), { sandbox_id: id, command: 'sleep 30' });
  assert.equal(bg.sandbox_id, id);
  const st = await ok(client, track('get_background_command'), { command_id: bg.command_id });
  assert.equal(st.running, true);
  assert.equal(st.exit_code, null);
  assert.deepEqual(await ok(client, track('kill_background_command'), { command_id: bg.command_id }), { success: true });
  await fails(client, 'kill_background_command', { command_id: bg.command_id, signal: 'SIGHUP' }, 'invalid_argument', { field: 'signal' });
  await fails(client, 'get_background_command', { command_id: 'not an id' }, 'invalid_argument', { field: 'command_id' });
  return (await ok(client, 'start_background_command', { sandbox_id: id, command: 'sleep 30' })).command_id;
}

/** Every listed tool, in success and error paths, in the era the client negotiated. */
async function exerciseEveryTool(client, era, listedNames) {
  const called = new Set();
  const track = (name) => { called.add(name); return name; };
  const id = await lifecycle(client, era, track);
  await executionAndFiles(client, id, track);
  const running = await background(client, id, track);

  assert.deepEqual(await ok(client, track('kill_sandbox'), { sandbox_id: id }), { success: true, sandbox_id: id });
  await goneHandle(client, 'get_sandbox', { sandbox_id: id }, era);
  await goneHandle(client, 'kill_sandbox', { sandbox_id: id }, era);
  if (era === 'modern') {
    // HANDLE-3, a modern rule: a command_id whose sandbox is gone. (A 2025
    // session answers from the command's last state, which no rule forbids.)
    await goneHandle(client, 'get_background_command', { command_id: running }, era);
    await goneHandle(client, 'kill_background_command', { command_id: running }, era);
  }

  assert.deepEqual([...called].sort(), [...listedNames].sort(), 'every listed tool was called');
}

// The contract's tools (TOOLS-1): compat/tools.json, generated from the tool
// table of conformance/contract/tools.md by go generate ./internal/toolset.
const CONTRACT_TOOLS = JSON.parse(readFileSync(new URL('../tools.json', import.meta.url), 'utf8')).map((t) => t.name);

/** tools/list: the contract's tools (section 1), each with schemas. */
async function listTools(client) {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), [...CONTRACT_TOOLS].sort(),
    `want the contract's ${CONTRACT_TOOLS.length} tools (compat/tools.json), got ${tools.map((t) => t.name)}`);
  for (const t of tools) {
    assert.equal(t.inputSchema.type, 'object', `${t.name}: inputSchema`);
    assert.equal(typeof t.outputSchema, 'object', `${t.name}: outputSchema`);
  }
  return tools;
}

/** The era each mode must reach against a server that serves both (client d.mts, above). */
function assertEra(client, mode) {
  const era = client.getProtocolEra();
  const version = client.getNegotiatedProtocolVersion();
  if (mode === 'default') {
    assert.equal(era, 'legacy', 'the default mode runs the 2025 sequence');
    assert.ok(LEGACY_VERSIONS.includes(version), `initialize negotiated ${version}`);
    return era;
  }
  assert.equal(era, 'modern', `${mode}: a dual-era server's server/discover is definitive modern evidence`);
  assert.equal(version, MODERN);
  // TOOLS-4: server/discover lists 2026-07-28 and every version initialize negotiates.
  const supported = client.getDiscoverResult()?.supportedVersions ?? [];
  for (const v of [MODERN, ...LEGACY_VERSIONS]) assert.ok(supported.includes(v), `server/discover lists ${v}: ${supported}`);
  return era;
}

const listsByTransport = { stdio: [], http: [] };

/** TOOLS-2, TOOLS-6: every mode and transport sees the same list. */
function assertSameList(tools) {
  const all = [...listsByTransport.stdio, ...listsByTransport.http];
  if (all.length > 0) assert.deepEqual(tools, all[0], 'tools/list is identical across eras and transports (TOOLS-6)');
}

for (const mode of ['default', 'auto', 'pinned']) {
  describe(`official MCP client v2 (${mode}) over stdio`, () => {
    const pidFile = join(tmpdir(), `sandboxkit-compat2-${process.pid}-${mode}.pids`);
    let conn;
    before(async () => { conn = await connectStdio2(mode, pidFile); });
    after(async () => {
      await conn?.close();
      rmSync(pidFile, { force: true });
    });

    test('negotiates its era', () => { assertEra(conn.client, mode); });
    test('lists the contract\'s tools', async () => {
      const tools = await listTools(conn.client);
      assertSameList(tools);
      listsByTransport.stdio.push(tools);
    });
    // After a request: a modern connect sends nothing to the session process,
    // so its PID is in the file only once it has served something.
    test('spawns the probe sibling only when it negotiates, and reaps it', () => {
      const pids = readFileSync(pidFile, 'utf8').trim().split('\n').map(Number);
      if (mode === 'default') {
        assert.equal(pids.length, 1, 'the legacy sequence starts one server process');
        return;
      }
      // negotiateStdioViaSibling: one probe sibling, then the session process;
      // the sibling is reaped before connect resolves.
      assert.equal(pids.length, 2, `want a probe sibling and the session process, got PIDs ${pids}`);
      assert.equal(alive(pids[0]), false, `the probe sibling ${pids[0]} is gone once connect resolved`);
      assert.equal(alive(pids[1]), true, 'the session process serves');
    });
    test('calls every tool in success and error paths, with readable errors', async () => {
      const names = (await conn.client.listTools()).tools.map((t) => t.name);
      await exerciseEveryTool(conn.client, conn.client.getProtocolEra(), names);
    });
  });

  describe(`official MCP client v2 (${mode}) over Streamable HTTP`, () => {
    let server;
    let conn;
    before(async () => {
      server = await startHTTPServer('127.0.0.1:0');
      conn = await connectHTTP2(mode, loopbackURL(server.port));
    });
    after(async () => {
      await conn?.close();
      await server?.stop();
    });

    test('negotiates its era', () => { assertEra(conn.client, mode); });
    test('lists the contract\'s tools', async () => {
      const tools = await listTools(conn.client);
      assertSameList(tools);
      listsByTransport.http.push(tools);
    });
    test('calls every tool in success and error paths, with readable errors', async () => {
      const names = (await conn.client.listTools()).tools.map((t) => t.name);
      await exerciseEveryTool(conn.client, conn.client.getProtocolEra(), names);
    });
    test('speaks the era it negotiated on the wire', () => {
      const minted = conn.exchanges.filter((x) => x.responseHeaders.has('mcp-session-id'));
      if (conn.client.getProtocolEra() === 'legacy') {
        assert.ok(minted.length > 0, 'a 2025 session has an Mcp-Session-Id');
        return;
      }
      // streamable-http.mdx: modern traffic is POST with a matching
      // MCP-Protocol-Version header, and no session is minted.
      assert.deepEqual(minted.map((x) => x.status), [], 'no modern response carries an Mcp-Session-Id');
      for (const x of conn.exchanges) {
        assert.equal(x.method, 'POST', 'modern traffic is POST');
        assert.equal(x.requestHeaders.get('mcp-protocol-version'), MODERN);
      }
    });
  });
}

// LEASE-3 through the client: a sandbox a modern request created outlives the
// client that created it; a later client, on a new connection, reaches it by
// its handle.
describe('official MCP client v2 (pinned): a sandbox outlives its connection', () => {
  let server;
  before(async () => { server = await startHTTPServer('127.0.0.1:0'); });
  after(async () => { await server?.stop(); });

  test('a new client reaches the sandbox by its sandbox_id and kills it', async () => {
    const first = await connectHTTP2('pinned', loopbackURL(server.port));
    const id = (await ok(first.client, 'create_sandbox', {})).sandbox_id;
    await first.close();
    const second = await connectHTTP2('pinned', loopbackURL(server.port));
    try {
      assert.equal((await ok(second.client, 'get_sandbox', { sandbox_id: id })).sandbox_id, id);
      await ok(second.client, 'kill_sandbox', { sandbox_id: id });
    } finally {
      await second.close();
    }
  });
});

// A pin the server does not offer fails loudly (client d.mts: "No fallback —
// anything else fails loudly with a typed error"). The server's answer is
// -32022 with the versions it supports (basic/versioning.mdx; TOOLS-4), which
// the client surfaces as UnsupportedProtocolVersionError (index-BCNZS4Ap.d.mts:
// `supported`, `requested`).
describe('official MCP client v2 pinned to a version the server does not serve', () => {
  let server;
  before(async () => { server = await startHTTPServer('127.0.0.1:0'); });
  after(async () => { await server?.stop(); });

  test('connect rejects with -32022 naming the supported versions', async () => {
    const client = newClient2('default');
    client.setVersionNegotiation({ mode: { pin: '2099-01-01' } });
    await assert.rejects(client.connect(new StreamableHTTPClientTransport(new URL(loopbackURL(server.port)))), (err) => {
      assert.ok(err instanceof UnsupportedProtocolVersionError, `want UnsupportedProtocolVersionError, got ${err.constructor.name}: ${err.message}`);
      assert.equal(err.code, -32022);
      for (const v of [MODERN, ...LEGACY_VERSIONS]) assert.ok(err.supported.includes(v), `data.supported lists ${v}: ${err.supported}`);
      return true;
    });
    await client.close();
  });
});

// An MCP host config that sets SANDBOXKIT_INSTANCE starts every stdio server
// under that one instance ID. With 'auto' or a pin, each connect also spawns
// the client's probe sibling (negotiateStdioViaSibling, above) while the
// first client's server still serves. SESSION-4: a start sweep destroys what
// a *dead* process of the instance owned, "and nothing else"; so a second
// client, its probe sibling and its session process must leave the first
// client's sandbox alone. The servers share one fake provider here, so a
// sweep could reach it.
for (const mode of ['default', 'auto']) {
  describe(`official MCP client v2 (${mode}): a second stdio client under the same SANDBOXKIT_INSTANCE`, () => {
    let fake;
    let first;
    let env;
    const pidDir = mkdtempSync(join(tmpdir(), 'sandboxkit-compat2-'));
    before(async () => {
      fake = await startFakeProvider();
      env = { ...fake.env, SANDBOXKIT_INSTANCE: `compat-probe-${mode}-${process.pid}` };
      first = await connectStdio2(mode, join(pidDir, 'first.pids'),
        { serveArgs: ['serve'], env });
    });
    after(async () => {
      await first?.close();
      await fake?.stop();
      rmSync(pidDir, { recursive: true, force: true });
    });

    test("leaves the first client's sandbox running", async () => {
      const id = (await ok(first.client, 'create_sandbox', {})).sandbox_id;
      const second = await connectStdio2(mode, join(pidDir, 'second.pids'),
        { serveArgs: ['serve'], env });
      try {
        assert.ok(Array.isArray((await ok(second.client, 'list_sandboxes', {})).sandboxes));
      } finally {
        await second.close();
      }
      const echo = await ok(first.client, 'run_command', { sandbox_id: id, command: 'echo still here' });
      assert.equal(echo.stdout, 'still here\n', "the first client's sandbox survived the second client's start and end");
      await ok(first.client, 'kill_sandbox', { sandbox_id: id });
    });
  });
}

// Off loopback the server demands a bearer token (`serve --help`, "HTTP
// security"), for modern requests as for 2025 sessions. It listens on 0.0.0.0
// so that it must; the client reaches it over 127.0.0.1 only. The v2 client
// reports a refused probe as SdkHttpError with the HTTP status in data.status
// (index-BCNZS4Ap.d.mts, SdkHttpErrorData).
describe('official MCP client v2 (pinned) off loopback needs the bearer token', () => {
  const token = randomBytes(24).toString('hex');
  let server;
  before(async () => { server = await startHTTPServer('0.0.0.0:0', { SANDBOXKIT_HTTP_TOKEN: token }); });
  after(async () => { await server?.stop(); });

  test('a client with the token is served', async () => {
    const conn = await connectHTTP2('pinned', loopbackURL(server.port), token);
    try {
      assert.equal(conn.client.getProtocolEra(), 'modern');
      assert.ok(Array.isArray((await ok(conn.client, 'list_sandboxes', {})).sandboxes));
    } finally {
      await conn.close();
    }
  });
  for (const [what, sent] of [['without a token', undefined], ['with a wrong token', 'not-the-token']]) {
    test(`a client ${what} is refused with 401`, async () => {
      await assert.rejects(connectHTTP2('pinned', loopbackURL(server.port), sent), (err) => {
        assert.ok(err instanceof SdkHttpError, `want SdkHttpError, got ${err.constructor.name}: ${err.message}`);
        assert.equal(err.data?.status, 401);
        return true;
      });
    });
  }
});
