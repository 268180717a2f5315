/**
 * The built `svc` as a process, on refusals found before any daemon is asked: each is the
 * one line `svc: error: MESSAGE (CODE)`, exit 2 for a usage error, 1 for a refusal.
 */
import { writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { type Home, newHome, svc as svcIn } from '@svc/test-harness/svc-cli';
import { afterAll, describe, expect, it } from 'vitest';

let home: Home;
const svc = (args: string[]) => {
  home ??= newHome('usage');
  // no test here may start a daemon: a refusal comes first
  return svcIn(home, ['--no-autostart', ...args]);
};
afterAll(async () => {
  if (home) await rm(home.dir, { recursive: true, force: true });
});

describe('commander refusals are usage errors of one line', () => {
  it.each([
    [['status'], "unknown command 'status' (did you mean one of star, start?); see svc --help"],
    // help for a command svc does not have is no answer (commander printed the root's help, exit 0)
    [['status', '--help'], "unknown command 'status' (did you mean one of star, start?); see svc --help"],
    [['stauts', '-h'], "unknown command 'stauts' (did you mean start?); see svc --help"],
    [['send', '--bogus', 'bob2', 'hi'], "unknown option '--bogus'; see svc send --help"],
    [['--bogus'], "unknown option '--bogus'; see svc --help"],
    [
      ['--as', 'carol', 'send', 'bob', 'hi'],
      "unknown option '--as' (it goes after the command: svc COMMAND --as …); see svc --help",
    ],
    [['deployment', 'fetch'], "required option '--url <url>' not specified; see svc deployment fetch --help"],
    [['agent', 'status'], "missing required argument 'presence'; see svc agent status --help"],
    [['send', '1', '2', '3'], "too many arguments for 'send'. Expected 2 arguments but got 3; see svc send --help"],
    [['auth'], 'svc auth needs a command: login, logout, mint-token, token, tokens; see svc auth --help'],
    // an option before a group's command: the command is what is missing (it said unknown option)
    [['msg', '--as', 'alice'], 'svc msg needs a command: ack, check, search (--as goes after it); see svc msg --help'],
    [['msg', '--bogus', 'ack'], "unknown option '--bogus'; see svc msg --help"],
    [
      ['send', 'bob', 'hi', '--no-autostart'],
      "unknown option '--no-autostart' (it goes before the command: svc --no-autostart COMMAND …); see svc send --help",
    ],
  ])('svc %j', async (args, message) => {
    const r = await svc(args);
    expect(r.stderr).toBe(`svc: error: ${message} (usage_error)\n`);
    expect(r).toMatchObject({ code: 2, stdout: '' });
  });

  it.each([
    [
      ['space', '--json'],
      'not_supported_self_hosted',
      'Spaces: only the hosted service offers this; a self-hosted deployment does not.',
    ],
    [
      ['space', 'tree', '--bogus', '--json'],
      'not_supported_self_hosted',
      'Spaces: only the hosted service offers this; a self-hosted deployment does not.',
    ],
    [['cache', '--json'], 'not_built_yet', 'svc cache is not built yet in this version of svc.'],
  ])('a group whose every command refuses one way refuses so itself: svc %j', async (args, code, message) => {
    const r = await svc(args);
    expect(JSON.parse(r.stdout)).toEqual({ error: code, message });
    expect(r.stderr).toBe(`svc: error: ${message} (${code})\n`);
    expect(r.code).toBe(1);
  });

  it('--json: the same message on stdout and the coded line on stderr', async () => {
    const r = await svc(['status', '--json']);
    expect(r.code).toBe(2);
    const message = "unknown command 'status' (did you mean one of star, start?); see svc --help";
    expect(JSON.parse(r.stdout)).toEqual({ error: 'usage_error', message });
    expect(r.stderr).toBe(`svc: error: ${message} (usage_error)\n`);
  });

  it('help marks what is hosted only or not built yet, as the refusal will say', async () => {
    const root = (await svc(['--help'])).stdout;
    for (const [command, mark] of [
      ['star', 'not built yet'],
      ['cache', 'not built yet'],
      ['space', 'hosted only'],
      ['discover', 'hosted only'],
    ]) {
      expect(root).toMatch(new RegExp(`^  ${command} .*\\(${mark}\\)$`, 'm'));
    }
    for (const [args, mark] of [
      [['recover', 'reset-consumers'], 'not built yet'],
      [['auth', 'logout'], 'hosted only'],
    ] as const) {
      expect((await svc([...args, '--help'])).stdout.split('\n')[2]).toMatch(new RegExp(`\\(${mark}\\)$`));
    }
    // built since: no mark
    expect((await svc(['doctor', '--help'])).stdout).not.toContain('not built yet');
    expect((await svc(['keys', 'backfill', '--help'])).stdout).not.toContain('not built yet');
  });

  it('help asked for is an answer: exit 0, nothing on stderr', async () => {
    for (const args of [
      ['help', 'send'],
      ['send', '--help'],
      ['discover', '--help'],
    ]) {
      const r = await svc(args);
      expect(r.code, args.join(' ')).toBe(0);
      expect(r.stderr, args.join(' ')).toBe('');
      expect(r.stdout, args.join(' ')).toContain(`Usage: svc ${args.find((a) => a !== 'help')}`);
    }
  });
});

describe("an option of a command group before the group's command is refused, not dropped", () => {
  // `svc conv` runs on its own, with these options; `svc conv list` runs with list's only
  it.each([
    [['conv', '--json', 'list'], '--json', 'svc conv list'],
    [['conv', '--as', 'bob', 'list'], '--as', 'svc conv list'],
    [['conv', '--limit', '3', 'create-group', 'g'], '--limit', 'svc conv create-group'],
  ])('svc %j', async (args, option, path) => {
    const r = await svc(args);
    const message = `${option} goes after the command it is for: ${path} ${option} …; see ${path} --help`;
    expect(r.stderr).toBe(`svc: error: ${message} (usage_error)\n`);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe(args.includes('--json') ? `${JSON.stringify({ error: 'usage_error', message })}\n` : '');
  });
});

describe('whoami --api-url: a value that is no http(s) URL is a usage error, not an unreachable relay', () => {
  it.each([['relay.example'], ['ftp://relay.example']])('svc whoami --api-url %s', async (url) => {
    const r = await svc(['whoami', '--api-url', url, '--api-key', 'k', '--json']);
    expect(JSON.parse(r.stdout)).toEqual({
      error: 'validation_failed',
      message: `--api-url must be the relay's http(s) base URL; got ${JSON.stringify(url)}.`,
    });
    expect(r.code).toBe(2);
  });
});

describe('msg search without search terms is refused in words of the command, not of the daemon API', () => {
  it.each([[''], ['   ']])('svc msg search %j', async (query) => {
    const r = await svc(['msg', 'search', query, '--json']);
    expect(JSON.parse(r.stdout)).toEqual({
      error: 'validation_failed',
      message: 'msg search needs search terms: svc msg search QUERY.',
    });
    expect(r.code).toBe(2);
  });
});

describe('a local file that cannot be used is io_error, not internal_error', () => {
  it('SVC_HOME naming a file: svc context list --json', async () => {
    home ??= newHome('usage');
    const file = join(home.dir, 'not-a-dir');
    writeFileSync(file, '');
    const r = await svcIn({ ...home, env: { ...home.env, SVC_HOME: file } }, ['context', 'list', '--json']);
    expect(JSON.parse(r.stdout)).toMatchObject({ error: 'io_error', message: expect.stringMatching(/ENOTDIR/) });
    expect(r.code).toBe(1);
  });
});

describe('hosted-only and not-built commands refuse before asking for options', () => {
  it.each([
    [['discover'], 'not_supported_self_hosted'],
    [['discover', '--limit', '1000'], 'not_supported_self_hosted'],
    [['agent', 'recover'], 'not_supported_self_hosted'],
    [['agent', 'recover', '--name', 'x', '--bogus'], 'not_supported_self_hosted'],
    [['account', 'upgrade'], 'not_supported_self_hosted'],
    [['cache', 'clear', '--scope', 'all'], 'not_built_yet'],
    [['recover', 'reset-consumers', '--agent'], 'not_built_yet'],
  ])('svc %j: %s, exit 1', async (args, code) => {
    const r = await svc(args);
    expect(r.stderr).toMatch(new RegExp(`^svc: error: [^\\n]+ \\(${code}\\)\\n$`));
    expect(r.code).toBe(1);
  });
});

describe('register --enrollment-grant: a value that is no enrollment code is a usage error', () => {
  const NOT_A_CODE =
    'svc: error: --enrollment-grant: not an svc enrollment code (expected svce1.<payload>.<secret>); copy the whole code the relay operator gave you. (validation_failed)\n';

  it.each([['garbage'], ['svce1.abc']])('svc register --enrollment-grant %s', async (value) => {
    const r = await svc(['register', '--enrollment-grant', value]);
    expect(r.stderr).toBe(NOT_A_CODE);
    expect(r.code).toBe(2);
  });

  it('a damaged code says what is wrong with it, exit 2', async () => {
    const r = await svc(['register', '--enrollment-grant', 'svce1.!!!.abc']);
    expect(r.stderr).toMatch(
      /^svc: error: --enrollment-grant: the enrollment code is damaged .*\(validation_failed\)\n$/,
    );
    expect(r.code).toBe(2);
  });

  it('with --tenant and --agent-id the value is a legacy raw grant, which this build does not take', async () => {
    const r = await svc(['register', '--enrollment-grant', 'raw', '--tenant', 't', '--agent-id', 'a']);
    expect(r.stderr).toMatch(/Legacy raw grants are not supported .*\(not_built_yet\)\n$/);
    expect(r.code).toBe(1);
  });
});

describe('help texts', () => {
  it('register --help states the --discoverable default once', async () => {
    const r = await svc(['register', '--help']);
    const line = r.stdout.split('\n').find((l) => l.trimStart().startsWith('--discoverable'));
    expect(line).toMatch(/list the agent in discovery \(default: true\)$/);
  });

  it('claude --help names the wake-on-mail hook besides the status line', async () => {
    const r = await svc(['claude', '--help']);
    expect(r.stdout).toMatch(/^claude integration: the status line and the wake-on-mail hook$/m);
    expect(r.stdout).toMatch(/install-wake-hook/);
  });
});
