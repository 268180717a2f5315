/**
 * The walkthroughs of docs/local-stack.md, run as printed by bash with `svc` and `svc-relay`
 * on PATH (as `npm link` puts them): two machines and a hub (a relay with a leaf listener,
 * two SVC_HOMEs, each with its uplink), then an offline machine. Only the ports change,
 * to free ones, so the run never meets another test's server.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, runChild, tempDir } from '@svc/test-harness';
import { RELAY_BIN, SVC_BIN } from '@svc/test-harness/bins';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const doc = readFileSync(join(ROOT, 'docs/local-stack.md'), 'utf8');

/** The first ```sh block after the line that starts with `after`. */
function shBlock(after: string): string {
  const from = doc.indexOf(after);
  if (from < 0) throw new Error(`docs/local-stack.md has no "${after}"`);
  const m = /```sh\n([\s\S]*?)```/.exec(doc.slice(from));
  if (!m) throw new Error(`no sh block after "${after}"`);
  return m[1] as string;
}

/**
 * The block with each printed port replaced by a free one; the relay's default port (8787,
 * which the block uses without naming it to `serve`) moves through SVC_RELAY_LISTEN.
 */
async function onFreePorts(script: string, ports: number[]): Promise<{ script: string; relayListen: string }> {
  let out = script;
  const relayPort = await freePort();
  out = out.replace(/\b8787\b/g, String(relayPort));
  for (const p of ports) out = out.replace(new RegExp(`\\b${p}\\b`, 'g'), String(await freePort()));
  return { script: out, relayListen: `127.0.0.1:${relayPort}` };
}

const home = tempDir('svc-docs-walk-');
const bin = join(home, 'bin');
mkdirSync(bin);
symlinkSync(SVC_BIN, join(bin, 'svc'));
symlinkSync(RELAY_BIN, join(bin, 'svc-relay'));
// a user's shell: no svc setting of the test run, the README's PATH, a vault without an OS keyring
const env: Record<string, string> = {
  ...Object.fromEntries(
    Object.entries(process.env).filter((e): e is [string, string] => !e[0].startsWith('SVC_') && e[1] !== undefined),
  ),
  HOME: home,
  PATH: `${bin}:${process.env.PATH ?? ''}`,
  SVC_VAULT_BACKEND: 'file',
  SVC_VAULT_PASSPHRASE: 'walkthrough-passphrase',
};

/** Runs a script in bash -e from HOME; output with stderr. */
function bash({
  script,
  relayListen,
}: {
  script: string;
  relayListen: string;
}): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-e', '-c', script], {
      cwd: home,
      env: { ...env, SVC_RELAY_LISTEN: relayListen },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      out += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 100_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

afterAll(async () => {
  // whatever a failed run left: the daemons of each home, then the relay on the hub's data dir
  for (const h of ['svc-a', 'svc-b', 'svc-offline']) {
    await runChild(SVC_BIN, ['stop'], { env: { ...env, SVC_HOME: join(home, h) } }).catch(() => undefined);
  }
  await runChild('pkill', ['-f', join(home, 'svc-hub')]).catch(() => undefined);
  rmSync(home, { recursive: true, force: true });
});

describe('docs/local-stack.md, as printed', () => {
  it('two machines and a hub: bob receives through his named source, carol from the same machine', async () => {
    const { code, out } = await bash(await onFreePorts(shBlock('### A walkthrough'), [7422, 4222, 4223, 8222, 8223]));
    expect(code, out).toBe(0);
    expect(out).toContain('agents:      bob (connected, via named source src_bob), uplink-b (uplink)');
    expect(out).toMatch(/alice +bob +text .* hello bob/);
    expect(out).toMatch(/alice +carol +text .* hello carol/);
  }, 180_000);

  it('an offline machine: two --local agents talk through the local server', async () => {
    const { code, out } = await bash(await onFreePorts(shBlock('An offline machine needs no relay'), [4224, 8224]));
    expect(code, out).toBe(0);
    expect(out).toMatch(/ann +ben +text .* hello ben/);
  }, 120_000);
});
