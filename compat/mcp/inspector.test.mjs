// The MCP Inspector CLI (@modelcontextprotocol/inspector 2.12.0) against
// `sandboxkit serve --fake`: tools/list must be byte-identical over stdio and
// over Streamable HTTP (TOOLS-2), and its schema-portability lint must find
// nothing (TOOLS-5: output schemas keep to keywords that mean the same in
// every dialect a client may read them in).
//
// The CLI is run as a host's user would run it:
//   node node_modules/.bin/mcp-inspector --cli --method tools/list <cmd...>
//   node node_modules/.bin/mcp-inspector --cli --method tools/list --server-url http://.../mcp
// (clients/cli/build/index.js: --server-url ending in /mcp selects the
// Streamable HTTP transport; --strict prints each portability finding as
// "Warning: tool ..." or "Error: tool ..." on stderr and exits 6 on an
// error-severity one, see writeSchemaLintReport / formatSchemaLintReport).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { sandboxkitBin } from '../lib/sandboxkit.mjs';
import { loopbackURL, serveFakeArgs, startHTTPServer } from '../lib/mcp.mjs';
import { readFileSync } from 'node:fs';

// The contract's tools: compat/tools.json, generated from conformance/contract/tools.md.
const CONTRACT_TOOLS = JSON.parse(readFileSync(new URL('../tools.json', import.meta.url), 'utf8'));

const run = promisify(execFile);
const inspector = fileURLToPath(new URL('../node_modules/.bin/mcp-inspector', import.meta.url));

/** Runs the Inspector CLI with Node 22 (the Go test's process.execPath). */
async function inspect(args) {
  try {
    return await run(process.execPath, [inspector, '--cli', ...args], { timeout: 60000, maxBuffer: 16 << 20 });
  } catch (err) {
    assert.fail(`mcp-inspector --cli ${args.join(' ')} failed (exit ${err.code}): ${err.stderr}`);
  }
}

/** The Inspector's schema-portability findings in its stderr. */
function findings(stderr) {
  return stderr.split('\n').filter((l) => /^(Warning|Error): tool /.test(l));
}

describe('MCP Inspector CLI tools/list', () => {
  let server;
  let stdio;
  let http;
  before(async () => {
    server = await startHTTPServer('127.0.0.1:0');
    stdio = await inspect(['--method', 'tools/list', '--strict', sandboxkitBin(), ...serveFakeArgs()]);
    http = await inspect(['--method', 'tools/list', '--strict', '--server-url', loopbackURL(server.port)]);
  });
  after(async () => { await server?.stop(); });

  test('lists the contract\'s tools over stdio and over Streamable HTTP', () => {
    for (const [transport, out] of [['stdio', stdio], ['http', http]]) {
      const { tools } = JSON.parse(out.stdout);
      assert.deepEqual(tools.map((t) => t.name).sort(), CONTRACT_TOOLS.map((t) => t.name).sort(), `${transport}: tool names`);
    }
  });

  // TOOLS-2: one schema per tool, so the listing is the same bytes.
  test('prints byte-identical tools/list output over both transports', () => {
    assert.ok(stdio.stdout.length > 0);
    assert.equal(http.stdout, stdio.stdout);
  });

  test('finds no schema-portability problem with --strict', () => {
    assert.deepEqual(findings(stdio.stderr), [], 'stdio');
    assert.deepEqual(findings(http.stderr), [], 'http');
  });
});
