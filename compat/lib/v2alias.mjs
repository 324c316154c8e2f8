// TEMPORARY (issue 11, data-plane branch h2): until the fake serves the v2
// create/connect routes (H1's part of issue 11), this loopback proxy sits
// between the SDK and the fake's control plane and rewrites
//   POST /v2/sandboxes               -> POST /sandboxes            (defaults timeout=300, secure=true)
//   POST /v2/sandboxes/{id}/connect  -> POST /sandboxes/{id}/connect (default timeout=300)
// The defaults are the v2 contract from e2b@2.51.0's bundled types
// (dist/index.d.ts NewSandboxV2 / ConnectSandboxV2: timeout @default 300,
// "always secured"). Every other request passes through untouched. Delete
// this file, and its use in the scripts, once the fake serves v2 itself.
import { createServer, request } from 'node:http';
import { once } from 'node:events';

/**
 * Starts the rewriting proxy in front of the fake's API URL and returns an
 * env whose E2B_API_URL points at it (E2B_SANDBOX_URL stays on the fake, so
 * envd traffic never passes through the proxy).
 * @param {Record<string,string>} env the fake's printed environment
 */
export async function startV2Alias(env) {
  const target = new URL(env.E2B_API_URL);
  const server = createServer(async (req, res) => {
    let path = req.url;
    let body = null;
    const create = req.method === 'POST' && /^\/v2\/sandboxes\/?(\?|$)/.test(path);
    const connect = req.method === 'POST' && /^\/v2\/sandboxes\/[^/]+\/connect(\?|$)/.test(path);
    if (create || connect) {
      const chunks = [];
      for await (const c of req) chunks.push(c);
      const raw = Buffer.concat(chunks).toString('utf8');
      const parsed = raw ? JSON.parse(raw) : {};
      const defaults = create ? { timeout: 300, secure: true } : { timeout: 300 };
      body = Buffer.from(JSON.stringify({ ...defaults, ...parsed }));
      path = path.replace(/^\/v2/, '');
    }
    const headers = { ...req.headers, host: target.host };
    if (body) headers['content-length'] = String(body.length);
    const up = request({ host: target.hostname, port: target.port, path, method: req.method, headers }, (upRes) => {
      res.writeHead(upRes.statusCode, upRes.headers);
      upRes.pipe(res);
    });
    up.on('error', () => res.destroy());
    if (body) up.end(body);
    else req.pipe(up);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  return {
    env: { ...env, E2B_API_URL: `http://127.0.0.1:${port}` },
    stop: async () => { server.closeAllConnections(); server.close(); },
  };
}
