// Helpers for the checks with the official MCP TypeScript client v2
// (@modelcontextprotocol/client 2.4.0), which speaks both MCP eras: the 2025
// `initialize` session and the sessionless 2026-07-28 protocol.
//
// Its negotiation modes are ClientOptions.versionNegotiation
// (node_modules/@modelcontextprotocol/client/dist/client-BTIWJvaF.d.mts,
// "src/client/versionNegotiation.d.ts" and ClientOptions): absent means
// 'legacy' (the plain 2025 sequence), { mode: 'auto' } probes with
// `server/discover` and falls back to `initialize`, and
// { mode: { pin: '2026-07-28' } } fails unless the server offers exactly that
// revision.
import { writeFileSync } from 'node:fs';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { sandboxkitBin, withTimeout } from './sandboxkit.mjs';

/** The modern revision (specification docs/specification/2026-07-28/). */
export const MODERN = '2026-07-28';

/** The three ways a host configures the v2 client, by name. */
export const MODES = {
  default: undefined,
  auto: { mode: 'auto' },
  pinned: { mode: { pin: MODERN } },
};

/** A v2 client in the named mode. */
export function newClient2(mode) {
  const versionNegotiation = MODES[mode];
  return new Client({ name: 'sandboxkit-compat-v2', version: '0.0.0' }, versionNegotiation ? { versionNegotiation } : {});
}

/**
 * Connects a v2 client over stdio to `sandboxkit serve --fake`. The server is
 * started through `sh -c 'echo $$ >> pidfile; exec sandboxkit ...'`, so every
 * process the client spawns (the session's, and the short-lived probe sibling
 * of the negotiating modes) leaves its PID in pidfile; exec keeps the PID.
 * @param {string} mode a key of MODES
 * @param {string} pidFile where the spawned processes' PIDs go
 * @param {{serveArgs?: string[], env?: Record<string,string>}} [opts] the
 *   serve command line (default: against its embedded fake) and extra
 *   environment (the client passes it on top of its default environment)
 */
export async function connectStdio2(mode, pidFile, { serveArgs = ['serve', '--fake'], env } = {}) {
  writeFileSync(pidFile, '');
  const script = 'echo $$ >> "$1"; shift; exec "$@"';
  const transport = new StdioClientTransport({
    command: '/bin/sh',
    args: ['-c', script, 'sh', pidFile, sandboxkitBin(), ...serveArgs],
    env, // StdioClientTransport.start (dist/stdio.mjs) spreads it over getDefaultEnvironment()
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (b) => { stderr += b; });
  const client = newClient2(mode);
  await withTimeout(client.connect(transport), 30000, `connect over stdio (${mode})`);
  return { client, stderr: () => stderr, close: () => client.close() };
}

/**
 * Connects a v2 client over Streamable HTTP. Every exchange the transport
 * makes is recorded (method, request headers, response status and headers)
 * through the transport's `fetch` option
 * (StreamableHTTPClientTransportOptions.fetch, dist/index.d.mts).
 * @param {string} mode a key of MODES
 * @param {string} url the MCP endpoint
 * @param {string} [token] bearer token sent as Authorization
 */
export async function connectHTTP2(mode, url, token) {
  const exchanges = [];
  const recordingFetch = async (input, init = {}) => {
    const res = await fetch(input, init);
    exchanges.push({
      method: (init.method ?? 'GET').toUpperCase(),
      requestHeaders: new Headers(init.headers),
      status: res.status,
      responseHeaders: res.headers,
    });
    return res;
  };
  const requestInit = token ? { headers: { Authorization: `Bearer ${token}` } } : undefined;
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch, requestInit });
  const client = newClient2(mode);
  await withTimeout(client.connect(transport), 30000, `connect to ${url} (${mode})`);
  return {
    client,
    exchanges,
    close: async () => {
      if (client.getProtocolEra() === 'legacy') await transport.terminateSession().catch(() => {});
      await client.close();
    },
  };
}

/** Whether a process with this PID still exists. */
export function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}
