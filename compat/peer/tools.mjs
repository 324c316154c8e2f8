// The contract tools of the TypeScript peer (see server.mjs), each a
// McpServer.registerTool with zod input and output schemas over the e2b JS
// SDK. Shapes follow conformance/contract/tools.md; where the e2b JS SDK has
// no equivalent (regions, disk size, SIGTERM for a background command), the
// peer says null or does what the SDK does, as a user's server would.
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Sandbox, CommandExitError, SandboxNotFoundError, NotFoundError, TimeoutError,
  AuthenticationError, RateLimitError, InvalidArgumentError } from 'e2b';
import { z } from 'zod';

// The contract's tools and their annotations: compat/tools.json, generated
// from the tool table of conformance/contract/tools.md (TOOLS-1).
const CONTRACT_TOOLS = JSON.parse(readFileSync(new URL('../tools.json', import.meta.url), 'utf8'));

/** server.registerTool with the annotations the contract's table gives the tool. */
function register(server, name, config, handler) {
  const tool = CONTRACT_TOOLS.find((t) => t.name === name);
  if (!tool) throw new Error(`peer: ${name} is not in the contract's tool table (compat/tools.json)`);
  const annotations = { readOnlyHint: tool.readOnly, destructiveHint: tool.destructive,
    idempotentHint: tool.idempotent, openWorldHint: tool.openWorld };
  return server.registerTool(name, { ...config, annotations }, handler);
}

const OUTPUT_CAP = 65536;
const MAX_FILE = 16 * 1024 * 1024;
const idArg = z.string().min(1).max(161).regex(/^([a-z][a-z0-9_-]{0,31}:)?[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/)
  .describe('The sandbox, bare. Default: this session\'s default sandbox.');
const pathArg = z.string().min(1).max(4096).regex(/^[^\x00]+$/);
const envsArg = z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,255}$/), z.string().max(32768));
const meta = z.object({
  sandbox_id: z.string(), template: z.string(), status: z.string(), region: z.string().nullable(),
  started_at: z.string().nullable(), end_at: z.string().nullable(), cpu_count: z.number().int().nullable(),
  memory_mb: z.number().int().nullable(), disk_size_mb: z.number().int().nullable(),
}).strict();
const execOut = z.object({ stdout: z.string(), stderr: z.string(), exit_code: z.number().int(), truncated: z.boolean() }).strict();

/** A tool error in the contract's one shape (ERR-2): no provider message, no value. */
class ToolError extends Error {
  constructor(category, extra = {}) {
    super(category);
    this.body = { category, ...extra };
  }
}

// The category of an HTTP status (the fixed set of ERR-2).
const byStatus = { 400: 'invalid_argument', 401: 'unauthenticated', 403: 'permission_denied', 404: 'not_found',
  409: 'conflict', 429: 'rate_limited', 502: 'unavailable', 503: 'unavailable', 504: 'timeout' };
const hints = {
  invalid_argument: 'Fix the arguments.', unauthenticated: 'Check the server\'s API key.',
  permission_denied: 'The API key may not do this.', not_found: 'Check the sandbox ID or path.',
  conflict: 'The sandbox is in another state; read it with get_sandbox.', rate_limited: 'Retry later.',
  unavailable: 'Retry later.', timeout: 'Retry, or raise the timeout.', provider_error: 'Retry; if it persists, check the provider.',
};

function categorize(err) {
  if (err instanceof ToolError) return err.body;
  const status = typeof err?.statusCode === 'number' ? err.statusCode : undefined;
  let category = byStatus[status];
  if (!category) {
    if (err instanceof SandboxNotFoundError || err instanceof NotFoundError) category = 'not_found';
    else if (err instanceof TimeoutError) category = 'timeout';
    else if (err instanceof AuthenticationError) category = 'unauthenticated';
    else if (err instanceof RateLimitError) category = 'rate_limited';
    else if (err instanceof InvalidArgumentError) category = 'invalid_argument';
    else category = status === undefined || status >= 500 ? 'provider_error' : 'invalid_argument';
  }
  return { category, ...(status !== undefined && { http_status: status }), recovery: hints[category] };
}

function ok(value) {
  return { structuredContent: value, content: [{ type: 'text', text: JSON.stringify(value) }] };
}

/** Wraps a handler so that any failure is a contract-shaped tool error. */
function guarded(fn) {
  return async (args, extra) => {
    try {
      return ok(await fn(args ?? {}, extra));
    } catch (err) {
      return { isError: true, content: [{ type: 'text', text: JSON.stringify({ error: categorize(err) }) }] };
    }
  };
}

function metadata(info) {
  const iso = (d) => (d instanceof Date && !Number.isNaN(d.getTime()) ? d.toISOString().replace(/\.000Z$/, 'Z') : null);
  return {
    sandbox_id: info.sandboxId, template: info.name ?? info.templateId, status: info.state ?? 'running', region: null,
    started_at: iso(info.startedAt), end_at: iso(info.endAt), cpu_count: info.cpuCount ?? null,
    memory_mb: info.memoryMB ?? null, disk_size_mb: null,
  };
}

/** Keeps the first and last half of at most OUTPUT_CAP bytes (EXEC-3). */
function cap(s) {
  const b = Buffer.from(s ?? '', 'utf8');
  if (b.length <= OUTPUT_CAP) return { text: b.toString('utf8'), cut: false };
  const marker = Buffer.from(`\n[... ${b.length - OUTPUT_CAP} bytes cut ...]\n`);
  const half = (OUTPUT_CAP - marker.length) >> 1;
  return { text: Buffer.concat([b.subarray(0, half), marker, b.subarray(b.length - half)]).toString('utf8'), cut: true };
}

function registerLifecycle(server, st) {
  register(server, 'create_sandbox', {
    title: 'Create sandbox', description: 'Create a sandbox; it becomes this session\'s default and is destroyed when the session closes.',
    inputSchema: z.object({
      template: z.string().min(1).max(128).optional(), timeout: z.number().int().min(1).max(86400).optional(),
      envs: envsArg.optional(), region: z.string().min(1).max(64).optional(),
      cpu: z.number().int().min(1).max(256).optional(), memory: z.number().int().min(1).max(1048576).optional(),
      provider: z.string().min(1).max(32).optional(),
    }).strict(),
    outputSchema: meta,
  }, guarded(async (a) => {
    if (a.cpu !== undefined || a.memory !== undefined || a.region !== undefined || (a.provider !== undefined && a.provider !== 'e2b')) {
      throw new ToolError('invalid_argument', { field: a.cpu !== undefined ? 'cpu' : a.memory !== undefined ? 'memory' : a.region !== undefined ? 'region' : 'provider', recovery: 'The e2b JS SDK fixes these per template.' });
    }
    const timeoutMs = (a.timeout ?? 300) * 1000;
    const sbx = await Sandbox.create(a.template ?? 'base', { timeoutMs, envs: a.envs });
    own(st, sbx, timeoutMs);
    return metadata(await sbx.getInfo());
  }));

  register(server, 'kill_sandbox', {
    title: 'Kill sandbox', description: 'Kill a sandbox (default: this session\'s default sandbox).',
    inputSchema: z.object({ sandbox_id: idArg.optional() }).strict(),
    outputSchema: z.object({ success: z.literal(true), sandbox_id: z.string() }).strict(),
  }, guarded(async (a) => {
    const id = a.sandbox_id ?? st.default?.sandboxId ?? noDefault();
    const found = await Sandbox.kill(id); // false on 404 (e2b dist/index.mjs Sandbox.kill)
    st.owned.delete(id);
    if (st.default?.sandboxId === id) st.default = null;
    if (!found) throw new ToolError('not_found', { http_status: 404, field: 'sandbox_id', recovery: hints.not_found });
    return { success: true, sandbox_id: id };
  }));

  register(server, 'get_sandbox', {
    title: 'Get sandbox', description: 'Read a sandbox\'s metadata (default: this session\'s default sandbox).',
    inputSchema: z.object({ sandbox_id: idArg.optional() }).strict(),
    outputSchema: meta,
  }, guarded(async (a) => {
    const id = a.sandbox_id ?? st.default?.sandboxId ?? noDefault();
    const owned = st.owned.get(id);
    return metadata(owned ? await owned.getInfo() : await Sandbox.getInfo(id));
  }));

  register(server, 'list_sandboxes', {
    title: 'List sandboxes', description: 'List the account\'s sandboxes, by offset.',
    inputSchema: z.object({
      status: z.enum(['running', 'paused']).optional(), limit: z.number().int().min(1).max(100).optional(),
      offset: z.number().int().min(0).max(10000).optional(), provider: z.string().min(1).max(32).optional(),
      region: z.string().min(1).max(64).optional(),
    }).strict(),
    outputSchema: z.object({ sandboxes: z.array(meta), limit: z.number().int(), offset: z.number().int() }).strict(),
  }, guarded(async (a) => {
    const limit = a.limit ?? 100, offset = a.offset ?? 0;
    const pages = Sandbox.list({ query: a.status ? { state: [a.status] } : undefined, limit: 100 });
    const all = [];
    while (pages.hasNext && all.length < offset + limit) all.push(...(await pages.nextItems()));
    return { sandboxes: all.slice(offset, offset + limit).map(metadata), limit, offset };
  }));

  register(server, 'set_sandbox_timeout', {
    title: 'Set sandbox timeout', description: 'Set a sandbox\'s remaining lifetime in seconds, counted from now.',
    inputSchema: z.object({ timeout: z.number().int().min(1).max(86400), sandbox_id: idArg.optional() }).strict(),
    outputSchema: z.object({ success: z.literal(true), sandbox_id: z.string(), timeout: z.number().int() }).strict(),
  }, guarded(async (a) => {
    const id = a.sandbox_id ?? st.default?.sandboxId ?? noDefault();
    const owned = st.owned.get(id);
    if (owned) {
      await owned.setTimeout(a.timeout * 1000);
      st.policyMs.set(id, a.timeout * 1000);
    } else {
      await Sandbox.setTimeout(id, a.timeout * 1000);
    }
    return { success: true, sandbox_id: id, timeout: a.timeout };
  }));
}

function noDefault() {
  throw new ToolError('invalid_argument', { code: 'no_default_sandbox', field: 'sandbox_id', recovery: 'Pass sandbox_id, or call create_sandbox first.' });
}

function own(st, sbx, timeoutMs) {
  st.owned.set(sbx.sandboxId, sbx);
  st.policyMs.set(sbx.sandboxId, timeoutMs);
  st.default = sbx;
}

/** The sandbox a data-plane tool uses, and a renew() to call once it ran (RENEW-1). */
async function reach(st, id) {
  let sbx = id ? st.owned.get(id) : st.default;
  if (!sbx && id) return { sbx: await Sandbox.connect(id), renew: async () => {} };
  if (!sbx) {
    sbx = await Sandbox.create('base', { timeoutMs: 300_000 });
    own(st, sbx, 300_000);
  }
  return { sbx, renew: () => sbx.setTimeout(st.policyMs.get(sbx.sandboxId)) };
}

/** Runs fn on the reached sandbox and renews it whether fn succeeded or not. */
async function onSandbox(st, id, fn) {
  const { sbx, renew } = await reach(st, id);
  try {
    return await fn(sbx);
  } finally {
    await renew().catch(() => {});
  }
}

async function runShell(sbx, command, opts) {
  let r;
  try {
    r = await sbx.commands.run(command, opts);
  } catch (err) {
    if (!(err instanceof CommandExitError)) throw err;
    r = err;
  }
  const out = cap(r.stdout), errs = cap(r.stderr);
  return { stdout: out.text, stderr: errs.text, exit_code: r.exitCode, truncated: out.cut || errs.cut };
}

function registerExec(server, st) {
  register(server, 'run_command', {
    title: 'Run command', description: 'Run a shell command in the sandbox and return its output and exit code.',
    inputSchema: z.object({
      command: z.string().min(1).max(32000), cwd: pathArg.optional(), envs: envsArg.optional(),
      timeout: z.number().int().min(1).max(3600).optional(), sandbox_id: idArg.optional(),
    }).strict(),
    outputSchema: execOut,
  }, guarded((a) => onSandbox(st, a.sandbox_id, (sbx) =>
    runShell(sbx, a.command, { cwd: a.cwd, envs: a.envs, timeoutMs: (a.timeout ?? 60) * 1000 }))));

  register(server, 'run_code', {
    title: 'Run code', description: 'Run a Python, JavaScript or Bash program in the sandbox.',
    inputSchema: z.object({
      code: z.string().min(1).max(1048576), language: z.enum(['python', 'javascript', 'bash']).optional(),
      timeout: z.number().int().min(1).max(3600).optional(), sandbox_id: idArg.optional(),
    }).strict(),
    outputSchema: execOut,
  }, guarded((a) => onSandbox(st, a.sandbox_id, async (sbx) => {
    const [prog, ext] = { python: ['python3', 'py'], javascript: ['node', 'js'], bash: ['bash', 'sh'] }[a.language ?? 'python'];
    const file = `/tmp/run-${randomBytes(8).toString('hex')}.${ext}`;
    await sbx.files.write(file, a.code);
    return runShell(sbx, `${prog} ${file}`, { timeoutMs: (a.timeout ?? 60) * 1000 });
  })));
}

function registerFiles(server, st) {
  register(server, 'write_file', {
    title: 'Write file', description: 'Write UTF-8 text to a file, creating parent directories.',
    inputSchema: z.object({ path: pathArg, content: z.string().max(MAX_FILE), sandbox_id: idArg.optional() }).strict(),
    outputSchema: z.object({ path: z.string(), bytes_written: z.number().int() }).strict(),
  }, guarded((a) => onSandbox(st, a.sandbox_id, async (sbx) => {
    await sbx.files.write(a.path, a.content);
    return { path: a.path, bytes_written: Buffer.byteLength(a.content) };
  })));

  register(server, 'read_file', {
    title: 'Read file', description: 'Read a UTF-8 text file of at most 1 MiB; use download_file for others.',
    inputSchema: z.object({ path: pathArg, sandbox_id: idArg.optional() }).strict(),
    outputSchema: z.object({ path: z.string(), content: z.string() }).strict(),
  }, guarded((a) => onSandbox(st, a.sandbox_id, async (sbx) => {
    const b = Buffer.from(await sbx.files.read(a.path, { format: 'bytes' }));
    let content;
    try {
      content = new TextDecoder('utf-8', { fatal: true }).decode(b);
    } catch {
      content = null;
    }
    if (content === null || b.length > 1 << 20) throw new ToolError('invalid_argument', { code: content === null ? 'not_utf8' : 'too_large', field: 'path', recovery: 'Use download_file instead.' });
    return { path: a.path, content };
  })));

  register(server, 'list_files', {
    title: 'List files', description: 'List a directory, to a depth of 1 to 10.',
    inputSchema: z.object({ path: pathArg, depth: z.number().int().min(1).max(10).optional(), sandbox_id: idArg.optional() }).strict(),
    outputSchema: z.object({
      entries: z.array(z.object({ name: z.string(), path: z.string(), type: z.enum(['file', 'directory', 'symlink']), size: z.number().int() }).strict()),
      truncated: z.boolean(),
    }).strict(),
  }, guarded((a) => onSandbox(st, a.sandbox_id, async (sbx) => {
    const list = await sbx.files.list(a.path, { depth: a.depth ?? 1 });
    const entries = list.map((e) => ({ name: e.name, path: e.path, type: e.symlinkTarget ? 'symlink' : e.type === 'dir' ? 'directory' : e.type, size: e.size }));
    return { entries, truncated: false };
  })));

  register(server, 'upload_file', {
    title: 'Upload file', description: 'Write bytes given in standard base64 to a file (at most 16 MiB decoded).',
    inputSchema: z.object({
      path: pathArg, data_base64: z.string().max(22369624).regex(/^[A-Za-z0-9+/]*={0,2}$/), sandbox_id: idArg.optional(),
    }).strict(),
    outputSchema: z.object({ path: z.string(), size: z.number().int(), sha256: z.string() }).strict(),
  }, guarded(async (a) => {
    const bytes = Buffer.from(a.data_base64, 'base64');
    if (a.data_base64.length % 4 !== 0 || bytes.toString('base64') !== a.data_base64) {
      throw new ToolError('invalid_argument', { code: 'invalid_base64', field: 'data_base64', recovery: 'Send standard base64 with padding.' });
    }
    if (bytes.length > MAX_FILE) throw new ToolError('invalid_argument', { code: 'too_large', field: 'data_base64', recovery: 'At most 16 MiB.' });
    return onSandbox(st, a.sandbox_id, async (sbx) => {
      await sbx.files.write(a.path, bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
      return { path: a.path, size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
    });
  }));

  register(server, 'download_file', {
    title: 'Download file', description: 'Read a file\'s bytes as standard base64 (at most max_bytes, 16 MiB).',
    inputSchema: z.object({ path: pathArg, max_bytes: z.number().int().min(1).max(MAX_FILE).optional(), sandbox_id: idArg.optional() }).strict(),
    outputSchema: z.object({ path: z.string(), size: z.number().int(), sha256: z.string(), data_base64: z.string(), truncated: z.boolean() }).strict(),
  }, guarded((a) => onSandbox(st, a.sandbox_id, async (sbx) => {
    const all = Buffer.from(await sbx.files.read(a.path, { format: 'bytes' }));
    const max = a.max_bytes ?? MAX_FILE;
    const b = all.subarray(0, max);
    return { path: a.path, size: b.length, sha256: createHash('sha256').update(b).digest('hex'), data_base64: b.toString('base64'), truncated: all.length > max };
  })));
}

function registerBackground(server, st) {
  register(server, 'start_background_command', {
    title: 'Start background command', description: 'Start a shell command and return at once; read it with get_background_command.',
    inputSchema: z.object({ command: z.string().min(1).max(32000), cwd: pathArg.optional(), envs: envsArg.optional(), sandbox_id: idArg.optional() }).strict(),
    outputSchema: z.object({ command_id: z.string(), sandbox_id: z.string() }).strict(),
  }, guarded((a) => onSandbox(st, a.sandbox_id, async (sbx) => {
    const handle = await sbx.commands.run(a.command, { background: true, cwd: a.cwd, envs: a.envs, timeoutMs: 0 });
    const cmd = { handle, done: false, sandboxId: st.owned.has(sbx.sandboxId) ? sbx.sandboxId : undefined };
    handle.wait().catch(() => {}).finally(() => { cmd.done = true; });
    const id = `bg-${randomBytes(8).toString('hex')}`;
    st.bg.set(id, cmd);
    return { command_id: id, sandbox_id: sbx.sandboxId };
  })));

  const unknown = () => new ToolError('not_found', { code: 'unknown_command', field: 'command_id', recovery: 'Use a command_id from start_background_command in this session.' });
  register(server, 'get_background_command', {
    title: 'Get background command', description: 'Read a background command\'s state and output from a cursor.',
    inputSchema: z.object({
      command_id: z.string().regex(/^bg-[0-9a-f]{16}$/), cursor: z.string().regex(/^[0-9]{1,18}\.[0-9]{1,18}$/).optional(),
      max_bytes: z.number().int().min(1).max(65536).optional(),
    }).strict(),
    outputSchema: z.object({
      running: z.boolean(), exit_code: z.number().int().nullable(), stdout: z.string(), stderr: z.string(),
      next_cursor: z.string(), truncated: z.boolean(),
    }).strict(),
  }, guarded(async (a) => {
    const cmd = st.bg.get(a.command_id);
    if (!cmd) throw unknown();
    const owner = st.owned.get(cmd.sandboxId);
    if (owner) await owner.setTimeout(st.policyMs.get(cmd.sandboxId)).catch(() => {}); // RENEW-1
    const [o, e] = (a.cursor ?? '0.0').split('.').map(Number);
    const max = a.max_bytes ?? 65536;
    const out = Buffer.from(cmd.handle.stdout).subarray(o, o + max);
    const err = Buffer.from(cmd.handle.stderr).subarray(e, e + max);
    const more = Buffer.byteLength(cmd.handle.stdout) > o + out.length || Buffer.byteLength(cmd.handle.stderr) > e + err.length;
    return {
      running: !cmd.done, exit_code: cmd.done ? (cmd.handle.exitCode ?? -1) : null, stdout: out.toString('utf8'),
      stderr: err.toString('utf8'), next_cursor: `${o + out.length}.${e + err.length}`, truncated: more,
    };
  }));

  register(server, 'kill_background_command', {
    title: 'Kill background command', description: 'Kill a background command (the e2b JS SDK sends SIGKILL).',
    inputSchema: z.object({ command_id: z.string().regex(/^bg-[0-9a-f]{16}$/), signal: z.enum(['SIGTERM', 'SIGKILL']).optional() }).strict(),
    outputSchema: z.object({ success: z.literal(true) }).strict(),
  }, guarded(async (a) => {
    const cmd = st.bg.get(a.command_id);
    if (!cmd) throw unknown();
    await cmd.handle.kill();
    const owner = st.owned.get(cmd.sandboxId);
    if (owner) await owner.setTimeout(st.policyMs.get(cmd.sandboxId)).catch(() => {}); // RENEW-1
    return { success: true };
  }));
}

/** Registers the contract's tools on server over the session state st. */
export function registerTools(server, st) {
  registerLifecycle(server, st);
  registerExec(server, st);
  registerFiles(server, st);
  registerBackground(server, st);
}
