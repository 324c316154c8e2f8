// The official MCP TypeScript client (@modelcontextprotocol/sdk 1.32.2, the
// client inside most MCP hosts) against `sandboxkit serve --fake`, over stdio
// and over Streamable HTTP: it lists the contract's tools and calls every one of
// them in success and error paths, and every call must come back to the
// caller as a result, never as a thrown error.
//
// Why a thrown error is the failure to look for: Client.callTool
// (node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.js, callTool,
// line 479 ff.) validates structuredContent against the tool's outputSchema
// whenever structuredContent is present, errors included, and throws
// McpError -32602 "Structured content does not match the tool's output
// schema" when it does not match; it throws -32600 when a tool with an
// outputSchema returns a success without structuredContent. The validators
// are compiled by listTools (cacheToolMetadata, same file, line 554 ff.), as
// a host does before it calls tools.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connectHTTP, connectStdio, loopbackURL, startHTTPServer } from '../lib/mcp.mjs';
import { resultChecks } from '../lib/results.mjs';

// The contract's tools (TOOLS-1): compat/tools.json, generated from the tool
// table of conformance/contract/tools.md by go generate ./internal/toolset.
const CONTRACT_TOOLS = JSON.parse(readFileSync(new URL('../tools.json', import.meta.url), 'utf8'));
const TOOLS = CONTRACT_TOOLS.map((t) => t.name);

const { ok, fails } = resultChecks('the official client');

/** Every tool, in success and error paths, in one session. */
async function exerciseEveryTool(client) {
  const called = new Set();
  const track = (name) => { called.add(name); return name; };

  // Lifecycle tools without a default sandbox, and validation errors.
  assert.deepEqual((await ok(client, track('list_sandboxes'), {})).sandboxes, []);
  await fails(client, 'list_sandboxes', { limit: 0 }, 'invalid_argument', { field: 'limit' });
  await fails(client, 'list_sandboxes', { limit: 'ten' }, 'invalid_argument', { field: 'limit' });
  await fails(client, track('get_sandbox'), {}, 'invalid_argument', { code: 'no_default_sandbox' });
  await fails(client, track('set_sandbox_timeout'), { timeout: true }, 'invalid_argument', { field: 'timeout' });
  await fails(client, 'set_sandbox_timeout', { timeout: 60 }, 'invalid_argument', { code: 'no_default_sandbox' });
  await fails(client, track('kill_sandbox'), {}, 'invalid_argument', { code: 'no_default_sandbox' });
  await fails(client, track('create_sandbox'), { cpu: 0 }, 'invalid_argument', { field: 'cpu' });
  await fails(client, 'create_sandbox', { team: 'x' }, 'invalid_argument', { field: 'team' });

  // A sandbox, and the lifecycle tools on it.
  const created = await ok(client, 'create_sandbox', {});
  const id = created.sandbox_id;
  assert.equal(typeof id, 'string');
  assert.equal((await ok(client, 'get_sandbox', {})).sandbox_id, id);
  await fails(client, 'get_sandbox', { sandbox_id: 'nosuchsandbox0000' }, 'not_found');
  assert.deepEqual(await ok(client, 'set_sandbox_timeout', { timeout: 600 }), { success: true, sandbox_id: id, timeout: 600 });
  assert.ok((await ok(client, 'list_sandboxes', { limit: 10 })).sandboxes.some((s) => s.sandbox_id === id));

  // Execution: output, a non-zero exit (a result, EXEC-1), a timeout (a
  // tool error of category timeout, EXEC-1), validation.
  const echo = await ok(client, track('run_command'), { command: 'echo hello' });
  assert.equal(echo.stdout, 'hello\n');
  assert.equal(echo.exit_code, 0);
  assert.equal((await ok(client, 'run_command', { command: 'exit 3' })).exit_code, 3);
  await fails(client, 'run_command', { command: 'sleep 30', timeout: 1 }, 'timeout');
  await fails(client, 'run_command', { command: 'true', timeout: true }, 'invalid_argument', { field: 'timeout' });
  assert.equal((await ok(client, track('run_code'), { code: 'echo code', language: 'bash' })).stdout, 'code\n');
  await fails(client, 'run_code', { code: 'x', language: 'cobol' }, 'invalid_argument', { field: 'language' });

  // Files: write, read, list; missing paths are not_found (FILE-4).
  const dir = '/home/user/compat';
  assert.equal((await ok(client, track('write_file'), { path: `${dir}/a.txt`, content: 'héllo' })).bytes_written, 6);
  assert.equal((await ok(client, track('read_file'), { path: `${dir}/a.txt` })).content, 'héllo');
  await fails(client, 'read_file', { path: `${dir}/missing.txt` }, 'not_found');
  await fails(client, 'write_file', { path: `${dir}/b.txt` }, 'invalid_argument', { field: 'content' });
  const listed = await ok(client, track('list_files'), { path: dir });
  assert.ok(listed.entries.some((e) => e.name === 'a.txt' && e.type === 'file'));
  await fails(client, 'list_files', { path: '/home/user/no-such-dir' }, 'not_found');

  // Binary transfer; a bad base64 is a validation error (BIN-1).
  const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  const up = await ok(client, track('upload_file'), { path: `${dir}/b.bin`, data_base64: bytes.toString('base64') });
  assert.equal(up.size, 256);
  assert.equal(up.sha256, createHash('sha256').update(bytes).digest('hex'));
  await fails(client, 'upload_file', { path: `${dir}/c.bin`, data_base64: 'abc' }, 'invalid_argument', { field: 'data_base64' });
  const down = await ok(client, track('download_file'), { path: `${dir}/b.bin` });
  assert.equal(down.data_base64, bytes.toString('base64'));
  await fails(client, 'download_file', { path: `${dir}/missing.bin` }, 'not_found');

  // Background commands; an unknown command_id is not_found (BG-3).
  const bg = await ok(client, track('start_background_command'), { command: 'sleep 30' });
  assert.equal(bg.sandbox_id, id);
  const st = await ok(client, track('get_background_command'), { command_id: bg.command_id });
  assert.equal(st.running, true);
  assert.equal(st.exit_code, null);
  assert.deepEqual(await ok(client, track('kill_background_command'), { command_id: bg.command_id }), { success: true });
  const unknown = 'bg-0123456789abcdef'; // well-formed, never issued
  await fails(client, 'get_background_command', { command_id: unknown }, 'not_found');
  await fails(client, 'kill_background_command', { command_id: unknown }, 'not_found');
  await fails(client, 'get_background_command', { command_id: 'not an id' }, 'invalid_argument', { field: 'command_id' });
  await fails(client, 'kill_background_command', { command_id: bg.command_id, signal: 'SIGHUP' }, 'invalid_argument', { field: 'signal' });

  // Kill the default; the sandbox is then gone (SESSION-3).
  await ok(client, 'kill_sandbox', {});
  await fails(client, 'get_sandbox', { sandbox_id: id }, 'not_found');
  await fails(client, 'kill_sandbox', { sandbox_id: id }, 'not_found');

  assert.deepEqual([...called].sort(), [...TOOLS].sort(), 'every tool was called');
}

/** tools/list through the official client: the contract's tools, each with an outputSchema and its annotations. */
async function listsTheTools(client) {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), [...TOOLS].sort());
  for (const t of tools) {
    assert.equal(t.inputSchema.type, 'object', `${t.name}: inputSchema`);
    assert.equal(typeof t.outputSchema, 'object', `${t.name}: outputSchema`);
    const want = CONTRACT_TOOLS.find((c) => c.name === t.name);
    assert.deepEqual(
      [t.annotations?.readOnlyHint, t.annotations?.destructiveHint, t.annotations?.idempotentHint, t.annotations?.openWorldHint],
      [want.readOnly, want.destructive, want.idempotent, want.openWorld],
      `${t.name}: annotations as the contract's tool table gives them`);
  }
}

describe('official MCP client over stdio', () => {
  let conn;
  before(async () => { conn = await connectStdio(); });
  after(async () => { await conn?.close(); });

  test('lists the contract\'s tools', async () => { await listsTheTools(conn.client); });
  test('calls every tool in success and error paths without a thrown error', async () => {
    await exerciseEveryTool(conn.client);
  });
});

describe('official MCP client over Streamable HTTP', () => {
  let server;
  let conn;
  before(async () => {
    server = await startHTTPServer('127.0.0.1:0');
    conn = await connectHTTP(loopbackURL(server.port));
  });
  after(async () => {
    await conn?.close();
    await server?.stop();
  });

  test('lists the contract\'s tools', async () => { await listsTheTools(conn.client); });
  test('calls every tool in success and error paths without a thrown error', async () => {
    await exerciseEveryTool(conn.client);
  });
});

// Off loopback the server demands a bearer token (`serve --help`, "HTTP
// security"; server/http.go). It listens on 0.0.0.0 here so that it must
// require the token, and the clients reach it over 127.0.0.1 only: no
// traffic leaves the machine. A server with a token set checks it on every
// request, whatever the interface it arrived on.
describe('Streamable HTTP off loopback needs the bearer token', () => {
  const token = randomBytes(24).toString('hex');
  let server;
  before(async () => {
    server = await startHTTPServer('0.0.0.0:0', { SANDBOXKIT_HTTP_TOKEN: token });
  });
  after(async () => { await server?.stop(); });

  test('a client with the token is accepted', async () => {
    const conn = await connectHTTP(loopbackURL(server.port), token);
    try {
      await listsTheTools(conn.client);
      assert.deepEqual((await ok(conn.client, 'list_sandboxes', {})).sandboxes, []);
    } finally {
      await conn.close();
    }
  });

  // StreamableHTTPClientTransport.send (dist/esm/client/streamableHttp.js,
  // line 378) throws StreamableHTTPError with the HTTP status when the POST
  // is refused and no authProvider is configured.
  for (const [what, sent] of [['without a token', undefined], ['with a wrong token', 'not-the-token']]) {
    test(`a client ${what} is refused`, async () => {
      await assert.rejects(connectHTTP(loopbackURL(server.port), sent), (err) => {
        assert.equal(err.code, 401, `want HTTP 401, got ${err.code}: ${err.message}`);
        return true;
      });
    });
  }
});
