#!/usr/bin/env node
// A TypeScript-SDK peer of `sandboxkit serve`, for side-by-side benchmarks
// (compat/peer_bench_test.go) and for running the conformance kit against a
// server of another design. It is what a user would write instead: the
// official MCP TS SDK (McpServer.registerTool with zod schemas,
// StreamableHTTPServerTransport or StdioServerTransport) over the official
// `e2b` JS SDK, with the contract's tool names, argument names and output
// shapes (conformance/contract/tools.md). It is a benchmark peer, not a
// product: no provider routing, no regions, no bearer token (loopback only).
//
//   node compat/peer/server.mjs --http 127.0.0.1:0   # logs "peer listening on http://HOST:PORT/mcp"
//   node compat/peer/server.mjs --stdio
//
// The e2b SDK reads E2B_API_KEY, E2B_API_URL, E2B_SANDBOX_URL and E2B_DOMAIN
// from the environment, as any e2b 2.x server does.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { registerTools } from './tools.mjs';

/** Makes one MCP server for one session; close() destroys what it owns. */
function newSession() {
  const server = new McpServer({ name: 'sandboxkit-ts-peer', version: '0.0.0' });
  const state = { default: null, owned: new Map(), policyMs: new Map(), bg: new Map(), closed: false };
  registerTools(server, state);
  envelopeValidationErrors(server);
  const close = async () => {
    if (state.closed) return;
    state.closed = true;
    await Promise.allSettled([...state.owned.values()].map((s) => s.kill()));
    state.owned.clear();
  };
  return { server, close };
}

/**
 * The SDK answers a call whose arguments fail the zod schema with a tool
 * error whose text is zod's message (server/mcp.js validateToolInput ->
 * createToolError). The contract wants its one error shape (ERR-2, VAL-6):
 * this rewrites that text into it, naming the field and nothing else.
 */
function envelopeValidationErrors(server) {
  const sdkError = server.createToolError.bind(server);
  server.createToolError = (message) => {
    if (!/Input validation error|Invalid arguments for tool/.test(message)) return sdkError(message);
    const field = /Unrecognized keys?: "([^"]+)"/.exec(message)?.[1] ?? / at ([A-Za-z_][A-Za-z0-9_]*)/.exec(message)?.[1];
    const error = { category: 'invalid_argument', ...(field && { field }), recovery: 'Fix the named argument and retry.' };
    return { isError: true, content: [{ type: 'text', text: JSON.stringify({ error }) }] };
  };
}

async function serveStdio() {
  const { server, close } = newSession();
  // The SDK's stdio transport drops a session whose message passes 10 MiB
  // (shared/stdio.js STDIO_DEFAULT_MAX_BUFFER_SIZE); a 16 MiB upload is ~22 MB.
  const transport = new StdioServerTransport(process.stdin, process.stdout, { maxBufferSize: 32 << 20 });
  transport.onclose = () => { close().finally(() => process.exit(0)); };
  process.stdin.on('end', () => transport.close());
  process.on('SIGTERM', () => transport.close());
  process.on('SIGINT', () => transport.close());
  await server.connect(transport);
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

async function handle(sessions, req, res) {
  if (new URL(req.url, 'http://x').pathname !== '/mcp') {
    res.writeHead(404).end();
    return;
  }
  const sid = req.headers['mcp-session-id'];
  let body;
  if (req.method === 'POST') {
    try {
      body = JSON.parse((await readBody(req)).toString('utf8'));
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' }, id: null }));
      return;
    }
  }
  let entry = sid ? sessions.get(sid) : undefined;
  if (!entry && !sid && req.method === 'POST' && isInitializeRequest(body)) {
    entry = newSession();
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => { sessions.set(id, entry); },
    });
    entry.transport = transport;
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
      entry.close();
    };
    await entry.server.connect(transport);
  }
  if (!entry) {
    res.writeHead(sid ? 404 : 400, { 'content-type': 'application/json' })
      .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: sid ? 'Session not found' : 'No session' }, id: null }));
    return;
  }
  await entry.transport.handleRequest(req, res, body);
}

async function serveHTTP(addr) {
  const i = addr.lastIndexOf(':');
  const host = addr.slice(0, i).replace(/^\[|\]$/g, '');
  const port = Number(addr.slice(i + 1));
  if (!['127.0.0.1', '::1', 'localhost'].includes(host)) {
    throw new Error('the peer serves loopback only (127.0.0.1, ::1 or localhost)');
  }
  const sessions = new Map();
  const http = createServer((req, res) => {
    handle(sessions, req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise((resolve) => http.listen(port, host, resolve));
  const a = http.address();
  process.stderr.write(`peer listening on http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}/mcp\n`);
  const stop = async () => {
    http.close();
    await Promise.allSettled([...sessions.values()].map((s) => s.transport.close()));
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

const argv = process.argv.slice(2);
if (argv.includes('--stdio')) {
  await serveStdio();
} else {
  const at = argv.indexOf('--http');
  await serveHTTP(at >= 0 && argv[at + 1] ? argv[at + 1] : '127.0.0.1:0');
}
