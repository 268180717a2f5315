/**
 * The real OS-keyring vault path. Each run gets its own D-Bus session bus
 * (`dbus-run-session`) with a fresh gnome-keyring unlocked in a temp HOME, so the
 * machine's own keyring and session bus are never touched:
 *
 *   dbus-run-session -- sh -c 'printf %s "$PW" | gnome-keyring-daemon --unlock --components=secrets >/dev/null
 *                              && node child.mjs write … && node child.mjs read …'
 *
 * The children (vault-keyring-child.ts) run the real daemon and the vault module with a
 * temp SVC_HOME and no SVC_VAULT_PASSPHRASE; one of them runs without the session bus,
 * so the keyring holding the secrets is out of reach. Skipped only when dbus-run-session or
 * gnome-keyring-daemon is not installed (scripts/setup.sh installs them as root).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempHome } from '@svc/test-harness/daemon';
import { transformSync } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { KEYRING_UNREACHABLE, keyringService } from '../src/vault/index.js';

const TOOLS = ['dbus-run-session', 'gnome-keyring-daemon'];
const onPath = (bin: string) =>
  (process.env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, bin), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
const missing = TOOLS.filter((t) => !onPath(t));

const daemonDir = fileURLToPath(new URL('..', import.meta.url));

/**
 * vault-keyring-child.ts as plain JavaScript in daemon/.tmp/, beside daemon/test/ so that its
 * imports of the built daemon (../dist) resolve the same: each step runs as `node child.mjs`,
 * without tsx, whose loader cost each of the four processes more than the step itself.
 */
function compiledChild(): string {
  const source = fileURLToPath(new URL('./vault-keyring-child.ts', import.meta.url));
  const dir = join(daemonDir, '.tmp');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `vault-keyring-child-${process.pid}.mjs`);
  writeFileSync(file, transformSync(readFileSync(source, 'utf8'), { loader: 'ts', format: 'esm' }).code);
  return file;
}

/** Every file under dir, recursively (contents as bytes). */
function filesUnder(dir: string): { path: string; bytes: Buffer }[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => {
      const path = join(d.parentPath, d.name);
      return { path, bytes: readFileSync(path) };
    });
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs script in `sh` inside a private D-Bus session; kills the whole group on timeout. */
function inSession(script: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Run> {
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const p = spawn('dbus-run-session', ['--', 'sh', '-c', script], { env, cwd: daemonDir, detached: true });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => {
      stdout += d;
    });
    p.stderr.on('data', (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => {
      try {
        if (p.pid) process.kill(-p.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }, timeoutMs);
    p.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    p.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - t0 });
    });
  });
}

/** The children's `RESULT <step> <json>` lines, by step. */
const results = (out: string) =>
  Object.fromEntries(
    out
      .split('\n')
      .map((l) => /^RESULT (\S+) (.*)$/.exec(l))
      .filter((m) => m !== null)
      // biome-ignore lint/suspicious/noExplicitAny: JSON from the child, checked by toEqual/toMatchObject
      .map((m) => [m[1], JSON.parse(m[2] ?? '') as any]),
  );

describe('vault: the real OS keyring (Secret Service via gnome-keyring in a private D-Bus session)', () => {
  it('the daemon picks the keyring without a passphrase; secrets round-trip, stay out of SVC_HOME, per home', async (ctx) => {
    if (missing.length > 0) {
      const why = `${missing.join(' and ')} not on PATH (apt: gnome-keyring dbus dbus-user-session; scripts/setup.sh installs them as root)`;
      console.warn(`vault-keyring: skipped, ${why}`);
      ctx.skip(why);
    }
    const keyringHome = tempHome('svc-keyring-home-');
    const runtimeDir = join(keyringHome, 'run');
    mkdirSync(runtimeDir, { mode: 0o700 });
    const homeA = tempHome();
    const homeB = tempHome();
    const secrets = {
      a: { seed: randomBytes(32).toString('base64url'), apiKey: `svc_ak_A_${randomBytes(18).toString('hex')}` },
      b: { seed: randomBytes(32).toString('base64url'), apiKey: `svc_ak_B_${randomBytes(18).toString('hex')}` },
    };
    // a clean environment: no passphrase, no session bus or keyring of the caller's
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: keyringHome,
      XDG_RUNTIME_DIR: runtimeDir,
      XDG_DATA_HOME: join(keyringHome, '.local', 'share'),
      XDG_CONFIG_HOME: join(keyringHome, '.config'),
      XDG_CACHE_HOME: join(keyringHome, '.cache'),
      ...(process.env.TMPDIR ? { TMPDIR: process.env.TMPDIR } : {}),
      LANG: 'C.UTF-8',
      SVC_HOME: homeA,
      SVC_DAEMON_LOG_LEVEL: 'debug',
      SVC_TEST_SECRETS: JSON.stringify(secrets),
      KEYRING_PW: randomBytes(12).toString('hex'),
    };
    const child = compiledChild();
    const node = (step: string) => `"${process.execPath}" "${child}" ${step} "${homeA}" "${homeB}"`;
    const script = [
      'set -e',
      'printf %s "$KEYRING_PW" | gnome-keyring-daemon --unlock --components=secrets >/dev/null',
      node('write'),
      // the same home started with its keyring out of reach (a session bus that is not there;
      // with none set, D-Bus would autolaunch a new one); the two only look, so at once
      `DBUS_SESSION_BUS_ADDRESS=unix:path=/nonexistent/svc-no-bus ${node('unreachable-daemon')} & daemon=$!`,
      `DBUS_SESSION_BUS_ADDRESS=unix:path=/nonexistent/svc-no-bus ${node('unreachable-vault')} & vault=$!`,
      'wait $daemon',
      'wait $vault',
      node('read'),
    ].join('\n');
    try {
      const run = await inSession(script, env, 15_000);
      const detail = `exit ${run.code} after ${run.ms} ms\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`;
      expect(run.code, detail).toBe(0);
      const {
        write: written,
        'unreachable-daemon': cutDaemon,
        'unreachable-vault': cutVault,
        read,
      } = results(run.stdout);
      expect(read, detail).toBeDefined();

      // the real daemon, started from the environment with no SVC_VAULT_PASSPHRASE
      expect(written.daemon).toEqual({ home: homeA, vault: { kind: 'keyring' } });
      expect(written.kinds).toEqual({ a: 'keyring', b: 'keyring' });
      expect(written.readBack).toEqual(secrets);
      // without its keyring the daemon starts, says where the secrets are, and locks the
      // vault instead of starting an empty file vault that would hide them from then on
      expect(cutDaemon, detail).toEqual({ vault: { kind: 'keyring', warning: KEYRING_UNREACHABLE, locked: true } });
      expect(cutVault, detail).toEqual({ refused: 'vault_locked' });
      // a second process sees the same entries (they live in the Secret Service)
      expect(read.kinds).toEqual({ a: 'keyring', b: 'keyring' });
      expect(read.before).toEqual(secrets);
      expect(read.direct).toEqual({ a: secrets.a.apiKey, b: secrets.b.apiKey });
      // same key names in two homes, separate entries: deleting A's leaves B's
      expect(read.after).toEqual({ a: { seed: null, apiKey: null }, b: secrets.b });

      // nothing secret on disk in either home: vault.json only names the keyring service
      for (const home of [homeA, homeB]) {
        expect(JSON.parse(readFileSync(join(home, 'vault.json'), 'utf8'))).toEqual({
          v: 1,
          kind: 'keyring',
          service: keyringService(home),
        });
      }
      const files = [...filesUnder(homeA), ...filesUnder(homeB)];
      expect(files.some((f) => f.path.endsWith('daemon.log'))).toBe(true);
      const seedBytes = (s: string) => Buffer.from(s, 'base64url');
      for (const f of files) {
        for (const s of [secrets.a, secrets.b]) {
          expect(f.bytes.includes(s.apiKey), f.path).toBe(false);
          expect(f.bytes.includes(s.seed), f.path).toBe(false);
          expect(f.bytes.includes(seedBytes(s.seed)), f.path).toBe(false);
          expect(f.bytes.includes(seedBytes(s.seed).toString('hex')), f.path).toBe(false);
          expect(f.bytes.includes(seedBytes(s.seed).toString('base64')), f.path).toBe(false);
        }
      }
    } finally {
      for (const dir of [keyringHome, homeA, homeB]) rmSync(dir, { recursive: true, force: true });
      rmSync(child, { force: true });
    }
  }, 20_000);
});
