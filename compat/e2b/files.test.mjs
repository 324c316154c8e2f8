// sandbox.files of the official E2B SDK (e2b@2.51.0) against the fake's
// envd. Each check cites what the SDK does (compat/node_modules/e2b/dist/
// index.mjs line) or what envd does (e2b-dev/infra at 54693ff, file), never
// the fake.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { Sandbox, FileType, FileNotFoundError, InvalidArgumentError, TimeoutError } from 'e2b';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { sandboxkitBin, sandboxForFile, withTimeout } from '../lib/sandboxkit.mjs';

let fake, sbx;
sandboxForFile(Sandbox, (f, s) => { fake = f; sbx = s; });

// index.mjs:1931 write(path, data) uploads one file (multipart, field
// "file") and answers {name, path, type} (index.mjs:2009); 1869 read
// defaults to format "text".
test('write a string, read it as text', async () => {
  const info = await sbx.files.write('/tmp/hello.txt', 'hello world');
  assert.equal(info.path, '/tmp/hello.txt');
  assert.equal(info.name, 'hello.txt');
  assert.equal(info.type, 'file');
  assert.equal(await sbx.files.read('/tmp/hello.txt'), 'hello world');
});

// A relative path is resolved against the user's home (/home/user for the
// default user "user"; infra packages/envd/internal/permissions/path.go
// ExpandAndResolve).
test('a relative path lands in the home directory', async () => {
  const info = await sbx.files.write('rel.txt', 'r');
  assert.equal(info.path, '/home/user/rel.txt');
});

// index.mjs:1912-1929: format bytes -> Uint8Array, blob -> Blob; 1877-1910
// stream -> a ReadableStream of the body.
test('write bytes and an ArrayBuffer blob; read in every format', async () => {
  const bytes = new Uint8Array([0, 1, 2, 250, 255, 10]);
  await sbx.files.write('/tmp/bin.dat', bytes);
  assert.deepEqual(await sbx.files.read('/tmp/bin.dat', { format: 'bytes' }), bytes);
  const blob = await sbx.files.read('/tmp/bin.dat', { format: 'blob' });
  assert.ok(blob instanceof Blob);
  assert.deepEqual(new Uint8Array(await blob.arrayBuffer()), bytes);
  const stream = await sbx.files.read('/tmp/bin.dat', { format: 'stream' });
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  assert.deepEqual(new Uint8Array(Buffer.concat(chunks)), bytes);

  await sbx.files.write('/tmp/ab.dat', bytes.buffer);
  assert.deepEqual(await sbx.files.read('/tmp/ab.dat', { format: 'bytes' }), bytes);
  await sbx.files.write('/tmp/blob.dat', new Blob(['blob-text']));
  assert.equal(await sbx.files.read('/tmp/blob.dat'), 'blob-text');
});

// index.mjs:1924-1927: an empty file (content-length 0) reads as "".
test('an empty file reads as empty text and bytes', async () => {
  await sbx.files.write('/tmp/empty.txt', '');
  assert.equal(await sbx.files.read('/tmp/empty.txt'), '');
  assert.equal((await sbx.files.read('/tmp/empty.txt', { format: 'bytes' })).length, 0);
});

// index.mjs:1985-1998: an array of {path, data} goes as one multipart
// request with one part per file, and write returns one entry per file.
test('write several files at once', async () => {
  const res = await sbx.files.write([
    { path: '/tmp/multi/a.txt', data: 'A' },
    { path: '/tmp/multi/b.txt', data: new Uint8Array([66]) },
  ]);
  assert.deepEqual(res.map((e) => e.path).sort(), ['/tmp/multi/a.txt', '/tmp/multi/b.txt']);
  assert.equal(await sbx.files.read('/tmp/multi/a.txt'), 'A');
  assert.equal(await sbx.files.read('/tmp/multi/b.txt'), 'B');
});

// index.mjs:1949-1951: with envd >= 0.5.7, useOctetStream (or gzip, or a
// stream) sends the raw body as application/octet-stream, gzip-encoded when
// asked (infra packages/envd/internal/api/upload.go handleRawUpload).
test('octet-stream, gzip and stream uploads', async () => {
  await sbx.files.write('/tmp/raw.txt', 'raw body', { useOctetStream: true });
  assert.equal(await sbx.files.read('/tmp/raw.txt'), 'raw body');
  await sbx.files.write('/tmp/gz.txt', 'gzipped '.repeat(100), { gzip: true });
  assert.equal(await sbx.files.read('/tmp/gz.txt'), 'gzipped '.repeat(100));
  const body = new ReadableStream({
    start(c) { c.enqueue(new TextEncoder().encode('streamed ')); c.enqueue(new TextEncoder().encode('data')); c.close(); },
  });
  await sbx.files.write('/tmp/streamed.txt', body);
  assert.equal(await sbx.files.read('/tmp/streamed.txt'), 'streamed data');
});

// index.mjs:1876: read with gzip: true asks for Accept-Encoding gzip;
// the content arrives decoded.
test('read with gzip', async () => {
  await sbx.files.write('/tmp/z.txt', 'zzz '.repeat(1000));
  assert.equal(await sbx.files.read('/tmp/z.txt', { gzip: true }), 'zzz '.repeat(1000));
});

// index.mjs:1954 metadata (envd >= 0.6.2) goes as X-Metadata-* headers
// (1821, 1831-1836); envd lowercases keys, stores them with the file and returns
// them in the upload answer and every entry (infra packages/envd/internal/
// api/upload.go, services/filesystem/utils.go entryInfo).
test('file metadata round-trips through write, getInfo and list', async () => {
  const info = await sbx.files.write('/tmp/meta.txt', 'm', { metadata: { Owner: 'ann', build: '42' } });
  assert.deepEqual(info.metadata, { owner: 'ann', build: '42' });
  const st = await sbx.files.getInfo('/tmp/meta.txt');
  assert.deepEqual(st.metadata, { owner: 'ann', build: '42' });
  const listed = (await sbx.files.list('/tmp')).find((e) => e.name === 'meta.txt');
  assert.deepEqual(listed.metadata, { owner: 'ann', build: '42' });
  // Every upload rewrites the metadata (upload.go: "overwriting a file
  // replaces its full metadata set"); none -> mapMetadata gives undefined
  // (index.mjs:1817-1820).
  await sbx.files.write('/tmp/meta.txt', 'm2');
  assert.equal((await sbx.files.getInfo('/tmp/meta.txt')).metadata, undefined);
});

// index.mjs:1824-1830: the SDK itself rejects metadata values that are not
// printable ASCII with InvalidArgumentError.
test('invalid metadata is refused by the SDK', async () => {
  await assert.rejects(sbx.files.write('/tmp/bad.txt', 'x', { metadata: { k: 'caf\u00e9' } }), InvalidArgumentError);
});

// index.mjs:2037 list(path, {depth}) -> ListDir; envd lists depth levels
// (infra services/filesystem/dir.go; depth < 1 is refused client-side,
// index.mjs:2039).
test('list with depth', async () => {
  await sbx.files.write('/tmp/tree/a/b/c.txt', 'c');
  const one = await sbx.files.list('/tmp/tree');
  assert.deepEqual(one.map((e) => e.path), ['/tmp/tree/a']);
  assert.equal(one[0].type, FileType.DIR);
  const three = await sbx.files.list('/tmp/tree', { depth: 3 });
  assert.deepEqual(three.map((e) => e.path).sort(), ['/tmp/tree/a', '/tmp/tree/a/b', '/tmp/tree/a/b/c.txt']);
  const file = three.find((e) => e.name === 'c.txt');
  assert.equal(file.type, FileType.FILE);
  assert.equal(file.size, 1);
  await assert.rejects(sbx.files.list('/tmp/tree', { depth: 0 }), InvalidArgumentError);
});

// index.mjs:2132 exists: Stat, NotFound -> false; 2155 getInfo maps the
// EntryInfo (1840-1854): name, type, path, size, mode, permissions, owner,
// group, modifiedTime.
test('exists and getInfo', async () => {
  await sbx.files.write('/tmp/info.txt', '12345');
  assert.equal(await sbx.files.exists('/tmp/info.txt'), true);
  assert.equal(await sbx.files.exists('/tmp/nope.txt'), false);
  const i = await sbx.files.getInfo('/tmp/info.txt');
  assert.equal(i.name, 'info.txt');
  assert.equal(i.type, FileType.FILE);
  assert.equal(i.size, 5);
  assert.equal(i.owner, 'user');
  assert.equal(i.group, 'user');
  assert.match(i.permissions, /^-rw/);
  assert.ok(i.modifiedTime instanceof Date && !Number.isNaN(i.modifiedTime.getTime()));
});

// index.mjs:2067 makeDir: true when created, AlreadyExists -> false.
test('makeDir', async () => {
  assert.equal(await sbx.files.makeDir('/tmp/newdir/sub'), true);
  assert.equal(await sbx.files.makeDir('/tmp/newdir/sub'), false);
  assert.equal((await sbx.files.getInfo('/tmp/newdir/sub')).type, FileType.DIR);
});

// index.mjs:2091 rename -> Move, answers the moved entry; 2113 remove ->
// Remove (a missing path is fine: infra services/filesystem/remove.go
// os.RemoveAll).
test('rename and remove', async () => {
  await sbx.files.write('/tmp/old.txt', 'o');
  const moved = await sbx.files.rename('/tmp/old.txt', '/tmp/new.txt');
  assert.equal(moved.path, '/tmp/new.txt');
  assert.equal(await sbx.files.exists('/tmp/old.txt'), false);
  assert.equal(await sbx.files.read('/tmp/new.txt'), 'o');
  await sbx.files.remove('/tmp/new.txt');
  assert.equal(await sbx.files.exists('/tmp/new.txt'), false);
  await sbx.files.remove('/tmp/new.txt');
});

// index.mjs:1780-1781: HTTP 404 and RPC not_found map to FileNotFoundError
// (a NotFoundError); envd answers 404 for a missing file (infra api/
// download.go) and not_found for Stat/ListDir/Move of a missing path; a
// directory read is 400 -> InvalidArgumentError (index.mjs:1536).
test('missing paths raise FileNotFoundError', async () => {
  await assert.rejects(sbx.files.read('/tmp/missing.txt'), FileNotFoundError);
  await assert.rejects(sbx.files.getInfo('/tmp/missing.txt'), FileNotFoundError);
  await assert.rejects(sbx.files.list('/tmp/missing-dir'), FileNotFoundError);
  await assert.rejects(sbx.files.rename('/tmp/missing.txt', '/tmp/x.txt'), FileNotFoundError);
  await assert.rejects(sbx.files.read('/tmp'), InvalidArgumentError);
});

// index.mjs:2177 watchDir -> WatchDir stream: the start event first
// (handleWatchDirStartEvent 1614), then onEvent({name, type, entry}) for
// each filesystem event (WatchHandle 1743-1749); includeEntry (envd
// >= 0.6.3) adds the entry for create/write/chmod (infra services/
// filesystem/utils.go opCarriesEntry). Names are relative to the directory.
test('watchDir reports changes, recursively and with entries', async () => {
  await sbx.files.makeDir('/tmp/watched/inner');
  const flat = [], deep = [];
  const h1 = await sbx.files.watchDir('/tmp/watched', (e) => flat.push(e), { includeEntry: true });
  const h2 = await sbx.files.watchDir('/tmp/watched', (e) => deep.push(e), { recursive: true });
  await sbx.files.write('/tmp/watched/f.txt', 'data');
  await sbx.files.write('/tmp/watched/inner/g.txt', 'g');
  await sbx.files.remove('/tmp/watched/f.txt');
  const until = async (cond) => {
    const t0 = Date.now();
    while (!cond()) {
      if (Date.now() - t0 > 10000) throw new Error(`events so far: ${JSON.stringify({ flat, deep })}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  await until(() => flat.some((e) => e.type === 'remove') && deep.some((e) => e.name === 'inner/g.txt'));
  await h1.stop();
  await h2.stop();
  const create = flat.find((e) => e.name === 'f.txt' && e.type === 'create');
  assert.ok(create, 'create event for f.txt');
  assert.equal(create.entry?.path, '/tmp/watched/f.txt');
  assert.ok(flat.some((e) => e.name === 'f.txt' && e.type === 'write'));
  assert.ok(!flat.some((e) => e.name.startsWith('inner/')), 'non-recursive watch sees only children');
  assert.equal(flat.find((e) => e.type === 'remove').entry, undefined);
  assert.ok(deep.some((e) => e.name === 'inner/g.txt' && e.type === 'create'));
  assert.equal(deep[0].entry, undefined);
});

// index.mjs:2177-2201: watching a missing directory fails at start with
// not_found -> FileNotFoundError (FILESYSTEM_RPC_ERROR_MAP, 1781; infra
// services/filesystem/watch.go "path %s not found").
test('watchDir on a missing directory raises FileNotFoundError', async () => {
  await assert.rejects(sbx.files.watchDir('/tmp/no-such-dir', () => {}), FileNotFoundError);
});

// Signed URLs: index.mjs:5734-5790 uploadUrl/downloadUrl sign
// "path:operation:user:token[:expiration]" (1427-1438) for a secured
// sandbox; a plain client fetches them with no other credential.
// With E2B_SANDBOX_URL the URL is on that shared address (index.mjs:1384,
// 5825), with no sandbox header.
test('signed download and upload URLs work with plain fetch on the shared URL', async () => {
  await sbx.files.write('/tmp/signed.txt', 'signed content');
  const dl = await sbx.downloadUrl('/tmp/signed.txt');
  assert.match(dl, /[?&]signature=v1_/);
  const res = await fetch(dl);
  assert.equal(res.status, 200);
  assert.equal(await res.text(), 'signed content');

  const ul = await sbx.uploadUrl('/tmp/uploaded.txt', { useSignatureExpiration: 60 });
  assert.match(ul, /signature_expiration=\d+/);
  const form = new FormData();
  form.append('file', new Blob(['via signed url']), 'uploaded.txt');
  const up = await fetch(ul, { method: 'POST', body: form });
  assert.equal(up.status, 200, await up.clone().text());
  assert.equal(await sbx.files.read('/tmp/uploaded.txt'), 'via signed url');

  // A signature is bound to its path (envd api/auth.go validateSigning
  // recomputes it from the request's path): a tampered path fails.
  const wrong = new URL(dl);
  wrong.searchParams.set('path', '/tmp/hello.txt');
  assert.notEqual((await fetch(wrong)).status, 200);
});

// The same signed URL in the platform's form, https://49983-<id>.<domain>
// (index.mjs:1388-1391 getHost; 1383-1387 without E2B_SANDBOX_URL), sent to
// the fake's loopback address as a TLS-terminating edge would forward it.
test('signed download URL by sandbox host name', async () => {
  const saved = process.env.E2B_SANDBOX_URL;
  delete process.env.E2B_SANDBOX_URL;
  let url;
  try {
    const byHost = await Sandbox.connect(sbx.sandboxId);
    url = new URL(await byHost.downloadUrl('/tmp/hello.txt'));
  } finally {
    process.env.E2B_SANDBOX_URL = saved;
  }
  assert.equal(url.protocol, 'https:');
  assert.ok(url.hostname.startsWith(`49983-${sbx.sandboxId}.`), url.hostname);
  const fakeAddr = new URL(saved);
  const body = await new Promise((resolve, reject) => {
    const req = request({ host: fakeAddr.hostname, port: fakeAddr.port, path: url.pathname + url.search, headers: { host: url.host } }, (res) => {
      let b = '';
      res.on('data', (c) => { b += c; });
      res.on('end', () => resolve({ status: res.statusCode, text: b }));
    });
    req.on('error', reject);
    req.end();
  });
  assert.equal(body.status, 200, body.text);
  assert.equal(body.text, 'hello world');
});

// After the sandbox is gone the edge answers 502 (infra packages/shared/pkg/
// proxy/template/sandbox_not_found.go: {sandboxId, message, code}); the SDK
// maps a 502 from /files to TimeoutError (index.mjs:1540, 587).
test('files of a killed sandbox raise TimeoutError; the edge body names the sandbox', async () => {
  const s = await Sandbox.create();
  await s.files.write('/tmp/x.txt', 'x');
  await s.kill();
  await assert.rejects(s.files.read('/tmp/x.txt'), TimeoutError);
  const res = await fetch(process.env.E2B_SANDBOX_URL + '/health', { headers: { 'E2b-Sandbox-Id': s.sandboxId, 'E2b-Sandbox-Port': '49983' } });
  assert.equal(res.status, 502);
  const body = await res.json();
  assert.equal(body.sandboxId, s.sandboxId);
  assert.equal(body.code, 502);
  assert.match(body.message, /^The sandbox was not found/);
});

// BIN-3: the reference server's transfer URLs are the SDK's own. The server
// runs against the same fake (`sandboxkit serve` reading the E2B_* variables
// of the fake, over stdio with the official MCP client) and reaches this
// sandbox as an external one; for the same path, user and expiration the
// SDK's downloadUrl/uploadUrl (index.mjs:5734-5790 with
// useSignatureExpiration: expiration = floor(now/1000) + seconds, 1429;
// username set when given, 5825-5829) give the very same URL, and plain
// fetch uses it as it uses the SDK's.
test('the server\'s transfer URLs equal the SDK\'s downloadUrl/uploadUrl and work with plain fetch', async () => {
  const transport = new StdioClientTransport({
    command: sandboxkitBin(), args: ['serve'], env: { ...process.env, ...fake.env }, stderr: 'pipe',
  });
  const client = new Client({ name: 'sandboxkit-compat', version: '0.0.0' });
  await withTimeout(client.connect(transport), 15000, 'connect to sandboxkit serve');
  try {
    const call = async (name, args) => {
      const res = await client.callTool({ name, arguments: { ...args, sandbox_id: sbx.sandboxId, transfer: 'url' } });
      assert.equal(res.isError ?? false, false, JSON.stringify(res.content));
      return res.structuredContent;
    };
    // The SDK's URL for the expiration the server chose; a second boundary
    // between the two readings of the clock gives another expiration, so
    // the SDK's is asked until it names the same one.
    const sdkURL = async (make, path, expiresAt) => {
      const exp = Math.floor(Date.parse(expiresAt) / 1000);
      for (let i = 0; i < 3; i++) {
        const u = new URL(await make(path, { user: 'user', useSignatureExpiration: exp - Math.floor(Date.now() / 1000) }));
        if (u.searchParams.get('signature_expiration') === String(exp)) return u;
      }
      throw new Error('the clock moved between every try');
    };
    const same = (ours, sdk) => {
      const a = new URL(ours);
      assert.equal(a.origin + a.pathname, sdk.origin + sdk.pathname);
      for (const k of ['path', 'username', 'signature', 'signature_expiration']) {
        assert.equal(a.searchParams.get(k), sdk.searchParams.get(k), k);
      }
      assert.deepEqual([...a.searchParams.keys()].sort(), [...sdk.searchParams.keys()].sort());
    };

    await sbx.files.write('/tmp/bin3.txt', 'through a signed url');
    const down = await call('download_file', { path: '/tmp/bin3.txt' });
    assert.equal(down.size, 'through a signed url'.length);
    same(down.url, await sdkURL((p, o) => sbx.downloadUrl(p, o), '/tmp/bin3.txt', down.expires_at));
    const got = await fetch(down.url);
    assert.equal(got.status, 200);
    assert.equal(await got.text(), 'through a signed url');

    const up = await call('upload_file', { path: '/tmp/bin3-up.txt' });
    assert.equal(up.method, 'POST');
    same(up.url, await sdkURL((p, o) => sbx.uploadUrl(p, o), '/tmp/bin3-up.txt', up.expires_at));
    const form = new FormData();
    form.append(up.form_field, new Blob(['posted to the server\'s url']), 'bin3-up.txt');
    const posted = await fetch(up.url, { method: up.method, body: form });
    assert.equal(posted.status, 200, await posted.clone().text());
    assert.equal(await sbx.files.read('/tmp/bin3-up.txt'), 'posted to the server\'s url');
  } finally {
    await client.close();
  }
});
