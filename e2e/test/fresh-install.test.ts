/**
 * What a new user meets on a fresh clone: `npm ci` accepts the lock file, `npm link` (as the
 * README says) puts `svc` and `svc-relay` on PATH, and they, `npx svc`, and the scripts/
 * wrappers run from any directory; a command whose build is missing says what to run.
 */
import { execFile } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { tempDir } from '@svc/test-harness';
import { afterAll, describe, expect, it } from 'vitest';

const exec = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'cli', 'package.json'), 'utf8')) as { version: string }).version;

const temps: string[] = [];
const temp = (prefix: string) => {
  const d = tempDir(prefix);
  temps.push(d);
  return d;
};
afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

/** Runs a command; resolves to its exit code and output instead of throwing. */
async function run(file: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }) {
  try {
    const { stdout, stderr } = await exec(file, args, { ...options, timeout: 120_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('a fresh clone', () => {
  it('npm ci accepts the lock file (it refuses one out of sync with the package.json files)', async () => {
    // the manifests alone, so the check installs nothing and touches no node_modules
    const dir = temp('svc-lock-check-');
    const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { workspaces: string[] };
    for (const w of ['.', ...root.workspaces]) {
      mkdirSync(join(dir, w), { recursive: true });
      copyFileSync(join(ROOT, w, 'package.json'), join(dir, w, 'package.json'));
    }
    copyFileSync(join(ROOT, 'package-lock.json'), join(dir, 'package-lock.json'));
    const r = await run('npm', ['ci', '--dry-run', '--ignore-scripts', '--offline', '--no-audit', '--no-fund'], {
      cwd: dir,
    });
    expect(r.code, `${r.stdout}${r.stderr}`).toBe(0);
  }, 120_000);

  it('npm link puts svc and svc-relay on PATH, and they run from any directory', async () => {
    const prefix = temp('svc-global-');
    const linked = await run('npm', ['link', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], {
      cwd: ROOT,
      env: { ...process.env, npm_config_prefix: prefix },
    });
    expect(linked.code, `${linked.stdout}${linked.stderr}`).toBe(0);
    const elsewhere = temp('svc-cwd-');
    const env = { ...process.env, PATH: `${join(prefix, 'bin')}:${process.env.PATH}` };
    for (const command of ['svc', 'svc-relay']) {
      const r = await run(command, ['--version'], { cwd: elsewhere, env });
      expect(r, command).toMatchObject({ code: 0, stdout: `${VERSION}\n` });
    }
    const help = await run('svc', ['send', '--help'], { cwd: elsewhere, env });
    expect(help.stdout).toContain('Usage: svc send');
  }, 120_000);

  it('npx svc and npx svc-relay run in the checkout', async () => {
    // two independent commands (npm's start alone takes a second): at once
    const runs = ['svc', 'svc-relay'].map((command) => ({
      what: `npx ${command}`,
      result: run('npx', ['--offline', command, '--version'], { cwd: ROOT }),
    }));
    for (const { what, result } of runs) expect(await result, what).toMatchObject({ code: 0, stdout: `${VERSION}\n` });
  }, 120_000);

  it('the scripts/ wrappers run from anywhere', async () => {
    const elsewhere = temp('svc-cwd-');
    const runs = ['svc.sh', 'svc-relay.sh'].map((script) => ({
      what: script,
      result: run(join(ROOT, 'scripts', script), ['--version'], { cwd: elsewhere }),
    }));
    for (const { what, result } of runs) expect(await result, what).toMatchObject({ code: 0, stdout: `${VERSION}\n` });
  }, 120_000);

  it('a command whose build is missing names the command that builds it', async () => {
    // the entry files as committed, in a checkout that has not been built
    const checkout = temp('svc-unbuilt-');
    for (const [pkg, entry] of [
      ['cli', join('cli', 'bin', 'svc.cjs')],
      ['relay', join('relay', 'bin', 'svc-relay.js')],
    ] as const) {
      mkdirSync(join(checkout, entry, '..'), { recursive: true });
      copyFileSync(join(ROOT, pkg, 'package.json'), join(checkout, pkg, 'package.json'));
      copyFileSync(join(ROOT, entry), join(checkout, entry));
      const r = await run(process.execPath, [join(checkout, entry), '--version'], { cwd: tmpdir() });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`not built yet; build it with: npm run build --prefix ${checkout}\n`);
    }
  });

  // Debian's nats-server is /usr/sbin/nats-server, and a normal user's PATH has no /usr/sbin
  const USER_PATH = ['/usr/local/bin', '/usr/bin', '/bin'];
  it.skipIf(!existsSync('/usr/sbin/nats-server') || USER_PATH.some((d) => existsSync(join(d, 'nats-server'))))(
    'setup, with nats-server installed in /usr/sbin off PATH, takes it as installed (the relay finds it there)',
    async () => {
      const checkout = temp('svc-setup-path-');
      mkdirSync(join(checkout, 'scripts'));
      copyFileSync(join(ROOT, 'scripts', 'setup.sh'), join(checkout, 'scripts', 'setup.sh'));
      // an apt-get that only notes what it was asked for
      const bin = temp('svc-setup-bin-');
      const asked = join(bin, 'apt-get-asked');
      writeFileSync(join(bin, 'apt-get'), `#!/bin/sh\necho "$@" >> '${asked}'\nexit 1\n`);
      chmodSync(join(bin, 'apt-get'), 0o755);
      // (it goes on to npm ci, which fails in this bare copy: only what comes before matters)
      const r = await run('bash', [join(checkout, 'scripts', 'setup.sh')], {
        cwd: tmpdir(),
        env: { HOME: checkout, PATH: [bin, ...USER_PATH].join(':') },
      });
      expect(r.stderr).not.toContain('nats-server');
      expect(existsSync(asked) ? readFileSync(asked, 'utf8') : '').not.toContain('nats-server');
    },
  );

  it.skipIf(process.getuid?.() !== 0 || !existsSync('/usr/sbin/nats-server'))(
    'setup installs the test-only packages for npm test (--test), never for npm start',
    async () => {
      const checkout = temp('svc-setup-test-');
      mkdirSync(join(checkout, 'scripts'));
      copyFileSync(join(ROOT, 'scripts', 'setup.sh'), join(checkout, 'scripts', 'setup.sh'));
      // a PATH with what the script runs and none of the test-only tools (chromium, tmux, …)
      const bin = temp('svc-setup-bin-');
      for (const tool of ['bash', 'dirname', 'ls', 'id', 'awk']) {
        const found = ['/usr/bin', '/bin'].map((d) => join(d, tool)).find((p) => existsSync(p));
        if (found) symlinkSync(found, join(bin, tool));
      }
      writeFileSync(join(bin, 'apt-get'), '#!/bin/sh\nexit 1\n');
      chmodSync(join(bin, 'apt-get'), 0o755);
      const setup = (args: string[]) =>
        run(join(bin, 'bash'), [join(checkout, 'scripts', 'setup.sh'), ...args], {
          cwd: tmpdir(),
          env: { HOME: checkout, PATH: bin },
        });
      const forStart = await setup([]);
      expect(forStart.stderr).not.toMatch(/chromium|tmux|postgresql|gnome-keyring/);
      const forTests = await setup(['--test']);
      expect(forTests.stderr).toMatch(
        /setup: installing chromium tmux jq curl .*gnome-keyring dbus dbus-user-session with apt-get/,
      );
    },
  );
});
