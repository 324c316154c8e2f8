// Helpers for the checks with the official MCP clients: they start
// `sandboxkit serve --fake` (the binary named by SANDBOXKIT_BIN) over stdio
// or Streamable HTTP on loopback and connect @modelcontextprotocol/sdk's
// Client to it.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { sandboxkitBin, withTimeout } from './sandboxkit.mjs';

/** The command line of the reference server against its embedded fake. */
export function serveFakeArgs(extra = []) {
  return ['serve', '--fake', ...extra];
}

/** A new official client, as a host would make it. */
export function newClient() {
  return new Client({ name: 'sandboxkit-compat', version: '0.0.0' });
}

/**
 * Connects the official client to `sandboxkit serve --fake` over stdio: the
 * SDK spawns the server and ends it when the client closes.
 * @returns {Promise<{client: Client, stderr: () => string, close: () => Promise<void>}>}
 */
export async function connectStdio() {
  const transport = new StdioClientTransport({ command: sandboxkitBin(), args: serveFakeArgs(), stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (b) => { stderr += b; });
  const client = newClient();
  await withTimeout(client.connect(transport), 15000, 'connect over stdio');
  return { client, stderr: () => stderr, close: () => client.close() };
}

/**
 * Starts `sandboxkit serve --fake --http ADDR` and resolves with the address
 * it listens on, read from its "serving MCP over Streamable HTTP" log line.
 * @param {string} addr listen address, e.g. 127.0.0.1:0
 * @param {Record<string,string>} env extra environment (the bearer token)
 * @returns {Promise<{port: number, addr: string, stderr: () => string, stop: () => Promise<void>}>}
 */
export async function startHTTPServer(addr, env = {}) {
  const child = spawn(sandboxkitBin(), serveFakeArgs(['--http', addr]), {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ...env },
  });
  let stderr = '';
  const ready = new Promise((resolve, reject) => {
    child.stderr.on('data', (b) => {
      stderr += b;
      const m = /msg="serving MCP over Streamable HTTP" addr=(\S+)/.exec(stderr);
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code} before it listened: ${stderr}`)));
  });
  const listening = await withTimeout(ready, 15000, 'serve --http did not log its address');
  const port = Number(listening.slice(listening.lastIndexOf(':') + 1));
  return {
    port,
    addr: listening,
    stderr: () => stderr,
    stop: async () => {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
    },
  };
}

/** The MCP endpoint of a server listening on port, reached over 127.0.0.1 only. */
export function loopbackURL(port) {
  return `http://127.0.0.1:${port}/mcp`;
}

/**
 * Connects the official client over Streamable HTTP.
 * @param {string} url the MCP endpoint
 * @param {string} [token] bearer token sent as Authorization
 */
export async function connectHTTP(url, token) {
  const requestInit = token ? { headers: { Authorization: `Bearer ${token}` } } : undefined;
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit });
  const client = newClient();
  await withTimeout(client.connect(transport), 15000, `connect to ${url}`);
  return {
    client,
    close: async () => {
      await transport.terminateSession().catch(() => {});
      await client.close();
    },
  };
}
