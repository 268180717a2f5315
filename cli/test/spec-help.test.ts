import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { tempDir } from '@svc/test-harness';
import { SVC_BIN } from '@svc/test-harness/bins';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { App } from '../src/app.js';
import { buildProgram } from '../src/program.js';
import { svc } from './helpers.js';
import { GLOBAL_OPTIONS, SPEC_CHOICES, SPEC_COMMANDS, SPEC_DEFAULTS } from './spec-commands.js';

/** `--flag` or `-f` as a whole word of the help text. */
function mentions(help: string, param: string): boolean {
  if (/^[A-Z][A-Z_]*$/.test(param)) {
    // positionals: commander shows <name> or [name]
    return new RegExp(`[<\\[]${param.toLowerCase()}(\\.\\.\\.)?[>\\]]`).test(help);
  }
  const escaped = param.replace(/[-]/g, '\\-');
  return new RegExp(`(?<![\\w-])${escaped}(?![\\w-])`).test(help);
}

/** The entries of the Options section, one string per option (continuation lines joined). */
function optionEntries(help: string): string[] {
  const section = help.split(/^Options:$/m)[1]?.split(/^\S/m)[0] ?? '';
  const entries: string[] = [];
  for (const line of section.split('\n')) {
    if (/^ {2}-/.test(line)) entries.push(line.trim());
    else if (line.trim() && entries.length) entries[entries.length - 1] += ` ${line.trim()}`;
  }
  return entries;
}

async function help(path: string): Promise<string> {
  const result = await svc([...path.split(' '), '--help']);
  expect(result.code, `svc ${path} --help`).toBe(0);
  return result.stdout;
}

/**
 * What `svc <path> --help` fails to show of the specification's tables (parameters,
 * choices, defaults), one line per gap.
 */
async function helpGaps(path: string): Promise<string[]> {
  const text = await help(path);
  const gaps: string[] = [];
  if (!text.includes(`Usage: svc ${path}`)) gaps.push(`svc ${path}: no "Usage: svc ${path}" line`);
  for (const p of SPEC_COMMANDS[path] ?? []) if (!mentions(text, p)) gaps.push(`svc ${path}: lacks ${p}`);
  const flat = text.replace(/\s+/g, ' ');
  for (const [flag, values] of Object.entries(SPEC_CHOICES[path] ?? {})) {
    const choices = `choices: ${values.map((v) => `"${v}"`).join(', ')}`;
    if (!flat.includes(choices)) gaps.push(`svc ${path}: ${flag} lacks (${choices})`);
  }
  const entries = optionEntries(text);
  for (const [flag, value] of Object.entries(SPEC_DEFAULTS[path] ?? {})) {
    const entry = entries.find((e) => mentions(e.split('  ')[0] ?? '', flag));
    if (!entry?.includes(`default: ${value}`)) gaps.push(`svc ${path}: ${flag} lacks (default: ${value})`);
  }
  return gaps;
}

describe('every command of the specification', () => {
  // one table-driven test over every command, flag, choice and default of spec-commands.ts
  it('svc <command> --help lists its parameters, their choices and defaults', async () => {
    const paths = new Set([...Object.keys(SPEC_COMMANDS), ...Object.keys(SPEC_CHOICES), ...Object.keys(SPEC_DEFAULTS)]);
    const gaps: string[] = [];
    for (const path of paths) gaps.push(...(await helpGaps(path)));
    expect(gaps).toEqual([]);
  });

  it('the root help lists the global options', async () => {
    const text = await help('');
    for (const flag of GLOBAL_OPTIONS) expect(mentions(text, flag), flag).toBe(true);
    expect(text).toContain('Exit status');
  });

  it('the tree has no command outside the specification except the documented additions', async () => {
    const program = await buildProgram(new App({ env: {}, stdout: { write() {} }, stderr: { write() {} } }));
    const paths: string[] = [];
    const walk = (c: Command, prefix: string[]) => {
      for (const sub of c.commands) {
        const p = [...prefix, sub.name()];
        paths.push(p.join(' '));
        walk(sub, p);
      }
    };
    walk(program, []);
    const groups = new Set(
      Object.keys(SPEC_COMMANDS).flatMap((p) =>
        p
          .split(' ')
          .slice(0, -1)
          .map((_, i, a) => a.slice(0, i + 1).join(' ')),
      ),
    );
    const extra = paths.filter((p) => !(p in SPEC_COMMANDS) && !groups.has(p));
    expect(extra.sort()).toEqual(
      [
        'agent webhook',
        'agent webhook clear',
        'agent webhook set',
        'agent webhook status',
        'desktop',
        'keys accept',
        // wake-on-mail (issue 14): an opt-in hook the specification does not name
        'claude install-wake-hook',
        'claude uninstall-wake-hook',
      ].sort(),
    );
    for (const path of Object.keys(SPEC_COMMANDS)) expect(paths, path).toContain(path);
  });
});

describe('help of the commands answered before the tree loads, and of subcommands through svc help', () => {
  it('svc help A B is the help of svc A B, as svc A B --help is', async () => {
    for (const path of ['agent webhook', 'agent webhook set', 'claude install-wake-hook']) {
      const viaHelp = await svc(['help', ...path.split(' ')]);
      expect(viaHelp.code, `svc help ${path}`).toBe(0);
      expect(viaHelp.stdout).toContain(`Usage: svc ${path} `);
      expect(viaHelp.stdout).toBe(await help(path));
    }
    // an unknown word is refused as with --help
    const unknown = await svc(['help', 'stauts']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown command 'stauts'");
  });

  it('svc statusline and svc wake-hook: --help, -h and svc help print their help, exit 0', async () => {
    // the real `svc` (the bin's fast path), with no daemon: without the fix it printed the line, or nothing
    const env = { PATH: process.env.PATH ?? '', HOME: tempDir('svc-fast-help-'), SVC_HOME: tempDir('svc-fast-help-') };
    const run = promisify(execFile);
    for (const command of ['statusline', 'wake-hook']) {
      for (const args of [
        [command, '--help'],
        [command, '-h'],
        ['help', command],
      ]) {
        const r = await run(process.execPath, [SVC_BIN, ...args], { env, timeout: 30_000 });
        expect(r.stdout, args.join(' ')).toMatch(new RegExp(`^Usage: svc ${command} \\[options\\]\n`));
        expect(r.stdout).toContain('(always exits 0)');
        expect(r.stderr).toBe('');
      }
    }
    // without it, the status line as before
    const line = await run(process.execPath, [SVC_BIN, 'statusline'], { env, timeout: 30_000 });
    expect(line.stdout).toBe('svc: daemon down (svc start)\n');
  });
});
