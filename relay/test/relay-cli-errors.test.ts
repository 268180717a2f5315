/** svc-relay's failures as an operator sees them: one line with a stable code, exit 2 for a usage error. */
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@svc/test-harness';
import { runRelayCli, spawnRelay } from '@svc/test-harness/relay-process';
import { describe, expect, it } from 'vitest';

describe('svc-relay usage errors', () => {
  const dataDir = tempDir('svc-relay-usage-');

  it.each([
    [['grant'], "required option '--agent-id <id>' not specified; see svc-relay grant --help"],
    [['grant', '--agent-id', 'a', '--bogus'], "unknown option '--bogus'; see svc-relay grant --help"],
    [
      ['grant', '--agent-id', 'a', '--capability', 'foo'],
      "option '--capability <cap...>' argument 'foo' is invalid. Allowed choices are http-relay, nats-relay; see svc-relay grant --help",
    ],
    [['bogus'], "unknown command 'bogus'; see svc-relay --help"],
    [['grnat'], "unknown command 'grnat' (did you mean grant?); see svc-relay --help"],
    [
      ['agent', 'revoke', '--data-dir', dataDir],
      "required option '--agent-id <id>' not specified; see svc-relay agent revoke --help",
    ],
    [['agent'], 'svc-relay agent needs a command: revoke; see svc-relay agent --help'],
    // an unset variable expanded (--ledger-dsn-file "$DSN_FILE") is refused, not taken as no flag
    [
      ['grant', '--agent-id', 'a', '--data-dir', dataDir, '--ledger-dsn-file', ''],
      '--ledger-dsn-file is empty: leave it out for the default, or give a value',
    ],
    [['dev', '--listen', ''], '--listen is empty: leave it out for the default, or give a value'],
    [['serve', '--data-dir', ''], '--data-dir is empty: leave it out for the default, or give a value'],
    // every command's flags, not only the settings' (these were taken as given, or as unset)
    [['nats', 'operator-init', '--dir', ''], '--dir is empty: leave it out for the default, or give a value'],
    [
      ['grant', '--agent-id', 'a', '--data-dir', dataDir, '--tenant', ''],
      '--tenant is empty: leave it out for the default, or give a value',
    ],
    [
      ['nats', 'reconcile-source-capacity', '--data-dir', dataDir, '--nats-url', ''],
      '--nats-url is empty: leave it out for the default, or give a value',
    ],
  ])('svc-relay %j: one line, usage_error, exit 2, no help', async (args, message) => {
    const r = await runRelayCli(args);
    expect(r.stderr).toBe(`svc-relay: error: ${message} (usage_error)\n`);
    expect(r).toMatchObject({ code: 2, stdout: '' });
  });

  it('a data dir or --dir that is a file: one line naming the path, config_invalid (it was the errno, internal_error)', async () => {
    const file = join(tempDir('svc-relay-usage-file-'), 'a-file');
    writeFileSync(file, 'not a directory\n');
    for (const args of [
      ['deployment', 'init', '--data-dir', file],
      ['nats', 'operator-init', '--dir', file],
    ]) {
      const r = await runRelayCli(args);
      expect(r.stderr, args.join(' ')).toMatch(
        new RegExp(
          `^svc-relay: error: cannot use ${file}[^\\n]*: (a part of it is a file, not a directory|a file is in the way of a directory); check the path given \\(config_invalid\\)\\n$`,
        ),
      );
      expect(r.code, args.join(' ')).toBe(2);
    }
  });

  it('nats operator-init --dir "" writes nothing where it runs; a --ledger-db that is not there is not created', async () => {
    const cwd = tempDir('svc-relay-usage-cwd-');
    const init = await runRelayCli(['nats', 'operator-init', '--dir', ''], {}, { cwd });
    expect(init.code).toBe(2);
    expect(readdirSync(cwd)).toEqual([]);

    const served = tempDir('svc-relay-usage-ledger-');
    expect((await runRelayCli(['deployment', 'init', '--data-dir', served])).code).toBe(0);
    const missing = join(cwd, 'no-such-dir', 'ledger.db');
    const r = await runRelayCli(['nats', 'reconcile-source-capacity', '--data-dir', served, '--ledger-db', missing]);
    expect(r.stderr).toBe(
      `svc-relay: error: --ledger-db ${missing} is not a file: give the relay's ledger (ledger.db in its data dir), or leave it out (usage_error)\n`,
    );
    expect(r.code).toBe(2);
    expect(existsSync(join(cwd, 'no-such-dir'))).toBe(false);
  });

  it('an invalid option value of grant or agent revoke exits 2; a tenant the relay does not serve is named with those it serves', async () => {
    const served = tempDir('svc-relay-usage-served-');
    const init = await runRelayCli(['deployment', 'init', '--data-dir', served, '--tenants', 'acme,globex']);
    expect(init.code, init.stderr).toBe(0);
    for (const [args, line] of [
      [
        ['grant', '--agent-id', 'bad id!'],
        'agent_id must be letters, digits and _ . : @ -, at most 256 characters (validation_failed)',
      ],
      [
        ['grant', '--agent-id', 'a', '--tenant', 'nope'],
        'tenant nope is not served by this relay (it serves acme, globex) (binding_mismatch)',
      ],
      [
        ['agent', 'revoke', '--agent-id', 'a', '--tenant', 'nope'],
        'tenant nope is not served by this relay (it serves acme, globex) (binding_mismatch)',
      ],
      // an id no grant can hold is refused as grant refuses it (it was "no active agent", not_found)
      [
        ['agent', 'revoke', '--agent-id', 'bad id!'],
        'agent_id must be letters, digits and _ . : @ -, at most 256 characters (validation_failed)',
      ],
    ] as const) {
      const r = await runRelayCli([...args, '--data-dir', served]);
      expect(r.stderr, args.join(' ')).toBe(`svc-relay: error: ${line}\n`);
      expect(r.code, args.join(' ')).toBe(2);
    }
  });

  it('a bad setting names the flag that gave it, or the variable (it named SVC_RELAY_LISTEN for --listen)', async () => {
    const env = { SVC_RELAY_DATA_DIR: tempDir('svc-relay-usage-flag-') };
    const byFlag = await runRelayCli(['dev', '--listen', 'nonsense'], env);
    expect(byFlag.stderr).toBe('svc-relay: error: --listen must be host:port (got "nonsense") (config_invalid)\n');
    expect(byFlag.code).toBe(2);
    const byEnv = await runRelayCli(['dev'], { ...env, SVC_RELAY_LISTEN: 'nonsense' });
    expect(byEnv.stderr).toBe(
      'svc-relay: error: SVC_RELAY_LISTEN must be host:port (got "nonsense") (config_invalid)\n',
    );
    const level = await runRelayCli(['serve', '--log-level', 'loud'], env);
    expect(level.stderr).toMatch(
      /^svc-relay: error: --log-level must be one of [^\n]* \(got "loud"\) \(config_invalid\)\n$/,
    );
  });

  it('--json puts the error object on stdout', async () => {
    const r = await runRelayCli(['grant', '--json']);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout)).toEqual({
      error: 'usage_error',
      message: "required option '--agent-id <id>' not specified; see svc-relay grant --help",
    });
  });

  it('--help, --version and help COMMAND still answer, with exit 0', async () => {
    for (const args of [['--help'], ['grant', '--help'], ['help', 'grant'], ['--version']]) {
      const r = await runRelayCli(args);
      expect(r.code, args.join(' ')).toBe(0);
      expect(r.stderr, args.join(' ')).toBe('');
    }
  });
});

describe('svc-relay runtime failures carry a code', () => {
  it('no nats-server where SVC_RELAY_NATS_SERVER_BIN points is dependency_missing, naming the setting and its value', async () => {
    const bin = join(tempDir('svc-relay-nonats-bin-'), 'nats-server');
    const r = await runRelayCli(['dev', '--listen', '127.0.0.1:0'], {
      SVC_RELAY_DATA_DIR: tempDir('svc-relay-nonats-'),
      SVC_RELAY_NATS_SERVER_BIN: bin,
    });
    expect(r.code).toBe(1);
    // the log lines before it are the relay's; the failure is the last line (it said only
    // "nats-server not found … point SVC_RELAY_NATS_SERVER_BIN at it", which it was)
    expect(r.stderr.trimEnd().split('\n').at(-1)).toBe(
      `svc-relay: error: SVC_RELAY_NATS_SERVER_BIN is "${bin}", which is not an executable file: point it at the nats-server executable, unset it to find nats-server on PATH or in /usr/sbin, or set SVC_RELAY_NATS_URL (dependency_missing)`,
    );
  });

  it("a normal user's PATH (no /usr/sbin) still finds Debian's nats-server", async () => {
    const relay = await spawnRelay({ command: 'dev', env: { PATH: '/usr/local/bin:/usr/bin:/bin' } });
    try {
      expect((await fetch(`${relay.url}/readyz`)).status).toBe(200);
    } finally {
      await relay.stop();
    }
  }, 60_000);
});
