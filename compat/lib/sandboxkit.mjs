// Helpers shared by the compatibility checks: they start the sandboxkit
// binary named by SANDBOXKIT_BIN (the Go test builds it) on loopback and
// stop it when the test ends.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { after, before } from 'node:test';

/** The sandboxkit binary under test. */
export function sandboxkitBin() {
  const bin = process.env.SANDBOXKIT_BIN;
  if (!bin) {
    throw new Error('SANDBOXKIT_BIN is not set: run these checks through `go test ./compat` (see compat/README.md)');
  }
  return bin;
}

/**
 * The fake provider's --exec flags: SANDBOXKIT_COMPAT_EXEC=namespace runs
 * every sandbox as real Linux processes (`fake-provider --exec namespace`,
 * root only); unset, the in-memory default. compat_test.go sets it for its
 * namespace run.
 */
export function fakeExecArgs() {
  const mode = process.env.SANDBOXKIT_COMPAT_EXEC;
  return mode ? ['--exec', mode] : [];
}

/**
 * Why a check does not apply to the namespace backend (a string for
 * node:test's `skip` option), or false in the in-memory mode. Each reason
 * is a difference listed in fakeprovider/doc.go, "Backends".
 */
export function skipInNamespace(reason) {
  return process.env.SANDBOXKIT_COMPAT_EXEC === 'namespace' ? `namespace backend: ${reason}` : false;
}

/**
 * Starts `sandboxkit fake-provider` on a free loopback port and resolves once
 * it has printed the E2B_* environment that points an SDK at it.
 * @param {string[]} args extra fake-provider flags
 * @returns {Promise<{env: Record<string,string>, stop: () => Promise<void>, stderr: () => string}>}
 */
export async function startFakeProvider(args = []) {
  const child = spawn(sandboxkitBin(), ['fake-provider', '--addr', '127.0.0.1:0', ...fakeExecArgs(), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (b) => { stderr += b; });
  const env = {};
  const lines = createInterface({ input: child.stdout });
  const ready = new Promise((resolve, reject) => {
    lines.on('line', (line) => {
      const m = /^(E2B_[A-Z_]+)=(.*)$/.exec(line);
      if (m) env[m[1]] = m[2];
      if (env.E2B_API_URL && env.E2B_API_KEY && env.E2B_DOMAIN && env.E2B_SANDBOX_URL) resolve();
    });
    child.once('exit', (code) => reject(new Error(`fake-provider exited with ${code} before it was ready: ${stderr}`)));
  });
  await withTimeout(ready, 15000, 'fake-provider did not print its environment');
  return {
    env,
    stderr: () => stderr,
    stop: async () => {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
    },
  };
}

/**
 * Points the E2B SDK of this process at a running fake: the SDK reads these
 * variables when a call does not pass its own options.
 */
export function useFakeEnv(env) {
  for (const [k, v] of Object.entries(env)) process.env[k] = v;
}

export async function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * One fake provider and one sandbox of `SandboxClass` (the SDK's `Sandbox`)
 * for a whole test file: a before hook starts the fake, points the SDK at it
 * and creates the sandbox, then hands both to `set`; an after hook kills the
 * sandbox and stops the fake.
 */
export function sandboxForFile(SandboxClass, set) {
  let fake, sbx;
  before(async () => {
    fake = await startFakeProvider();
    useFakeEnv(fake.env);
    sbx = await SandboxClass.create();
    set(fake, sbx);
  });
  after(async () => {
    await sbx?.kill().catch(() => {});
    await fake?.stop();
  });
}
