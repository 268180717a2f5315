/**
 * The coding-assistant integrations against temp homes with settings already there:
 * install, re-install and uninstall of the status line leave the settings file
 * byte-identical to before; the codex setup is idempotent, keeps every other setting,
 * and migrates a legacy entry in place. Through `svc` in-process, as a user runs them.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { tempDir } from '@svc/test-harness';
import { parse } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { STATUSLINE_SCRIPT } from '../src/integrations/claude.js';
import { shellQuote } from '../src/integrations/files.js';
import { statusText } from '../src/statusline.js';
import { AGENT, fakeLink, svc } from './helpers.js';

function executable(path: string): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, '#!/bin/sh\n', { mode: 0o755 });
  return path;
}

function homes() {
  const root = tempDir('svc-integrations-');
  const env = { HOME: join(root, 'home'), SVC_HOME: join(root, 'svc'), PATH: join(root, 'bin') };
  mkdirSync(env.HOME, { recursive: true });
  mkdirSync(env.PATH, { recursive: true });
  return {
    root,
    env,
    /** svc binaries for --binary (an explicit one must be an executable file) */
    opt: executable(join(root, 'opt', 'svc')),
    usr: executable(join(root, 'usr', 'bin', 'svc')),
    settings: join(env.HOME, '.claude', 'settings.json'),
    codex: join(env.HOME, '.codex', 'config.toml'),
  };
}

/** Odd on purpose: tabs, key order, a prior status line, unicode, no final newline. */
const PRIOR_SETTINGS =
  '{\n\t"model": "opus",\n\t"statusLine": {"type": "command", "command": "~/bin/my-line.sh"},\n\t"permissions": {"allow": ["Bash(ls:*)"]},\n\t"note": "café ☕"\n}';

describe('svc claude install-statusline / uninstall-statusline', () => {
  it('install, re-install, uninstall: the settings file ends byte-identical, mode kept', async () => {
    const h = homes();
    mkdirSync(join(h.env.HOME, '.claude'));
    writeFileSync(h.settings, PRIOR_SETTINGS, { mode: 0o640 });
    chmodSync(h.settings, 0o640);

    const first = await svc(['claude', 'install-statusline', '--binary', h.opt], { env: h.env });
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('The prior status line (~/bin/my-line.sh) comes back');
    const installed = JSON.parse(readFileSync(h.settings, 'utf8'));
    expect(installed).toEqual({
      model: 'opus',
      statusLine: { type: 'command', command: `${h.opt} statusline`, padding: 0 },
      permissions: { allow: ['Bash(ls:*)'] },
      note: 'café ☕',
    });
    // the key stays where it was, in the file's own indentation
    expect(readFileSync(h.settings, 'utf8')).toMatch(/^\{\n\t"model": "opus",\n\t"statusLine": \{/);
    expect(statSync(h.settings).mode & 0o777).toBe(0o640);
    // a backup of the file as it was
    const backups = readdirSync(join(h.env.SVC_HOME, 'integrations', 'backups'));
    expect(backups.map((f) => readFileSync(join(h.env.SVC_HOME, 'integrations', 'backups', f), 'utf8'))).toContain(
      PRIOR_SETTINGS,
    );

    // re-install with another binary: still svc's, and the first install's record stays
    expect((await svc(['claude', 'install-statusline', '--binary', h.usr], { env: h.env })).code).toBe(0);
    expect(JSON.parse(readFileSync(h.settings, 'utf8')).statusLine.command).toBe(`${h.usr} statusline`);

    const un = await svc(['claude', 'uninstall-statusline'], { env: h.env });
    expect(un.code).toBe(0);
    expect(un.stdout).toContain('as it was before the install');
    expect(readFileSync(h.settings, 'utf8')).toBe(PRIOR_SETTINGS);
    expect(statSync(h.settings).mode & 0o777).toBe(0o640);

    // and again: nothing recorded any more
    const again = await svc(['claude', 'uninstall-statusline'], { env: h.env });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('(integration_not_installed)');

    // a second full cycle ends the same
    expect((await svc(['claude', 'install-statusline', '--binary', h.opt], { env: h.env })).code).toBe(0);
    expect((await svc(['claude', 'uninstall-statusline'], { env: h.env })).code).toBe(0);
    expect(readFileSync(h.settings, 'utf8')).toBe(PRIOR_SETTINGS);
  });

  it('without settings before: uninstall removes what install created, directory included', async () => {
    const h = homes();
    // no --binary: the sh script that ships with svc (no svc on PATH needed)
    const r = await svc(['claude', 'install-statusline'], { env: h.env });
    expect(r.code).toBe(0);
    expect(JSON.parse(readFileSync(h.settings, 'utf8'))).toEqual({
      statusLine: { type: 'command', command: shellQuote(STATUSLINE_SCRIPT), padding: 0 },
    });
    expect(statSync(STATUSLINE_SCRIPT).mode & 0o111).toBe(0o111);
    expect((await svc(['claude', 'uninstall-statusline'], { env: h.env })).code).toBe(0);
    expect(existsSync(h.settings)).toBe(false);
    expect(existsSync(join(h.env.HOME, '.claude'))).toBe(false);
    expect(readdirSync(h.env.HOME)).toEqual([]);
  });

  it('settings the user changed after install keep their change; only the status line goes back', async () => {
    const h = homes();
    mkdirSync(join(h.env.HOME, '.claude'));
    writeFileSync(h.settings, PRIOR_SETTINGS);
    await svc(['claude', 'install-statusline', '--binary', h.opt], { env: h.env });
    const edited = JSON.parse(readFileSync(h.settings, 'utf8'));
    edited.theme = 'dark';
    writeFileSync(h.settings, JSON.stringify(edited, null, '\t'));
    const r = await svc(['claude', 'uninstall-statusline'], { env: h.env });
    expect(r.stdout).toContain('your other changes stay');
    expect(JSON.parse(readFileSync(h.settings, 'utf8'))).toEqual({
      ...JSON.parse(PRIOR_SETTINGS),
      theme: 'dark',
    });
  });

  it('a re-install after the user or the wake hook changed the file: uninstall takes out only the status line', async () => {
    // it restored the file from before the first install: the user's edit and the hook went with it
    const h = homes();
    mkdirSync(join(h.env.HOME, '.claude'));
    writeFileSync(h.settings, PRIOR_SETTINGS);
    expect((await svc(['claude', 'install-statusline', '--binary', h.opt], { env: h.env })).code).toBe(0);
    const edited = JSON.parse(readFileSync(h.settings, 'utf8'));
    edited.theme = 'dark';
    writeFileSync(h.settings, JSON.stringify(edited, null, '\t'));
    expect((await svc(['claude', 'install-wake-hook', '--binary', h.opt], { env: h.env })).code).toBe(0);
    expect((await svc(['claude', 'install-statusline', '--binary', h.usr], { env: h.env })).code).toBe(0);
    const un = await svc(['claude', 'uninstall-statusline'], { env: h.env });
    expect(un.code).toBe(0);
    expect(un.stdout).toContain('your other changes stay');
    const left = JSON.parse(readFileSync(h.settings, 'utf8'));
    expect(left.theme).toBe('dark');
    expect(left.statusLine).toEqual(JSON.parse(PRIOR_SETTINGS).statusLine);
    expect(left.hooks.Stop).toEqual([{ hooks: [{ type: 'command', command: `${h.opt} wake-hook`, timeout: 5 }] }]);
    // the hook is still svc's to take out
    const hook = await svc(['claude', 'uninstall-wake-hook'], { env: h.env });
    expect(hook.stdout).not.toContain('no longer');
    expect(JSON.parse(readFileSync(h.settings, 'utf8'))).toEqual({ ...JSON.parse(PRIOR_SETTINGS), theme: 'dark' });
  });

  it('a settings file that is not JSON is left untouched, with a clear error', async () => {
    const h = homes();
    mkdirSync(join(h.env.HOME, '.claude'));
    writeFileSync(h.settings, '{ "model": "opus", }');
    const r = await svc(['claude', 'install-statusline', '--binary', h.opt], { env: h.env });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('(integration_config_invalid)');
    expect(readFileSync(h.settings, 'utf8')).toBe('{ "model": "opus", }');
  });

  it('the wake-on-mail hook installs beside the user hooks and the status line; any uninstall order ends byte-identical', async () => {
    const prior =
      '{\n  "hooks": {\n    "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],\n    "PreToolUse": []\n  },\n  "model": "opus"\n}\n';
    for (const order of [
      ['uninstall-wake-hook', 'uninstall-statusline'],
      ['uninstall-statusline', 'uninstall-wake-hook'],
    ]) {
      const h = homes();
      mkdirSync(join(h.env.HOME, '.claude'));
      writeFileSync(h.settings, prior);
      expect((await svc(['claude', 'install-statusline', '--binary', h.opt], { env: h.env })).code).toBe(0);
      const w = await svc(['claude', 'install-wake-hook', '--binary', h.opt], { env: h.env });
      expect(w.stderr).toBe('');
      const both = JSON.parse(readFileSync(h.settings, 'utf8'));
      expect(both.hooks.Stop).toEqual([
        { hooks: [{ type: 'command', command: 'say done' }] },
        { hooks: [{ type: 'command', command: `${h.opt} wake-hook`, timeout: 5 }] },
      ]);
      expect(both.hooks.PreToolUse).toEqual([]);
      expect(both.statusLine.command).toBe(`${h.opt} statusline`);
      // installing again adds nothing
      await svc(['claude', 'install-wake-hook', '--binary', h.opt], { env: h.env });
      expect(JSON.parse(readFileSync(h.settings, 'utf8')).hooks.Stop).toHaveLength(2);
      for (const cmd of order) expect((await svc(['claude', cmd], { env: h.env })).code, cmd).toBe(0);
      expect(readFileSync(h.settings, 'utf8'), order.join(' then ')).toBe(prior);
    }
  });

  it('install-wake-hook --help says what --binary runs: `<path> wake-hook`', async () => {
    const help = (await svc(['claude', 'install-wake-hook', '--help'])).stdout;
    expect(help).toContain('<path> wake-hook');
    expect(help).not.toContain('statusline');
  });

  it('an explicit --binary that is not an executable file is refused (binary_not_found), nothing written', async () => {
    const h = homes();
    mkdirSync(join(h.env.HOME, '.claude'));
    writeFileSync(h.settings, PRIOR_SETTINGS);
    const notExec = join(h.root, 'opt', 'svc.txt');
    writeFileSync(notExec, '', { mode: 0o644 });
    const cases: [string, string, string][] = [
      ['install-wake-hook', '/nonexistent/svc', 'no such file'],
      ['install-statusline', join(h.root, 'dir with space', 'svc'), 'no such file'],
      ['install-statusline', join(h.root, 'opt'), 'a directory, not a file'],
      ['install-wake-hook', notExec, 'not executable'],
    ];
    for (const [cmd, binary, why] of cases) {
      const r = await svc(['claude', cmd, '--binary', binary], { env: h.env });
      expect(r.code, `${cmd} --binary ${binary}`).toBe(1);
      expect(r.stderr).toBe(
        `svc: error: --binary ${binary}: ${why}; pass the path of the svc binary (nothing was written). (binary_not_found)\n`,
      );
    }
    expect(readFileSync(h.settings, 'utf8')).toBe(PRIOR_SETTINGS);
    expect(existsSync(join(h.env.SVC_HOME, 'integrations'))).toBe(false);
  });

  it('the wake hook alone on a file without hooks leaves no hooks key behind', async () => {
    const h = homes();
    mkdirSync(join(h.env.HOME, '.claude'));
    writeFileSync(h.settings, '{"model": "opus"}');
    await svc(['claude', 'install-wake-hook', '--binary', h.opt], { env: h.env });
    const edited = JSON.parse(readFileSync(h.settings, 'utf8'));
    edited.theme = 'dark'; // a user change: uninstall must take out only the hook
    writeFileSync(h.settings, JSON.stringify(edited));
    expect((await svc(['claude', 'uninstall-wake-hook'], { env: h.env })).code).toBe(0);
    expect(JSON.parse(readFileSync(h.settings, 'utf8'))).toEqual({ model: 'opus', theme: 'dark' });
  });

  it('the status line text: agent, relay state and unread count in one line', () => {
    const summary = {
      agents: [
        { name: 'alice', agent_number: 'alice', session: 'connected' as const, unread: 3 },
        { name: 'bob', agent_number: 'bob', session: 'offline' as const, unread: 0 },
      ],
    };
    expect(statusText(summary, 'alice')).toBe('svc alice ● connected · 3 unread');
    expect(statusText(summary)).toBe('svc alice ● connected · 3 unread | bob ○ offline');
    expect(statusText({ agents: [] })).toBe('svc: no agent');
  });
});

const PRIOR_TOML = `# my codex settings
model = "o4-mini"   # keep this comment

[mcp_servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]

[profiles.work]
model = "gpt-5"
`;

describe('svc codex setup', () => {
  const link = () =>
    fakeLink({ getAgent: (name) => ({ ...AGENT, name, agent_number: name === 'alice' ? 'alice' : name }) }).link;
  /** temp homes with an `svc` on PATH, whose absolute path the entry runs */
  const homesWithSvc = () => {
    const h = homes();
    const svcPath = join(h.env.PATH, 'svc');
    writeFileSync(svcPath, '#!/bin/sh\n', { mode: 0o755 });
    return { ...h, svcPath };
  };

  it('without svc on PATH refuses (nothing written), as install-wake-hook does; --binary names it', async () => {
    const h = homes();
    mkdirSync(join(h.env.HOME, '.codex'));
    writeFileSync(h.codex, PRIOR_TOML);
    const r = await svc(['codex', 'setup', '--agent', 'alice'], { env: h.env });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('(binary_not_found)');
    expect(readFileSync(h.codex, 'utf8')).toBe(PRIOR_TOML);

    // a relative path is made absolute
    const given = await svc(['codex', 'setup', '--agent', 'alice', '--binary', relative(process.cwd(), h.opt)], {
      env: h.env,
      link: link(),
    });
    expect(given.code, given.stderr).toBe(0);
    const config = parse(readFileSync(h.codex, 'utf8')) as { mcp_servers: Record<string, { command: string }> };
    expect(config.mcp_servers['svc-alice']!.command).toBe(h.opt);
  });

  it('--binary svc (a bare name) is looked up on PATH, not taken for ./svc', async () => {
    const withSvc = homesWithSvc();
    mkdirSync(join(withSvc.env.HOME, '.codex'));
    const r = await svc(['codex', 'setup', '--agent', 'alice', '--binary', 'svc'], { env: withSvc.env, link: link() });
    expect(r.code, r.stderr).toBe(0);
    const config = parse(readFileSync(withSvc.codex, 'utf8')) as { mcp_servers: Record<string, { command: string }> };
    expect(config.mcp_servers['svc-alice']!.command).toBe(join(withSvc.env.PATH as string, 'svc'));
    const without = homes();
    const refused = await svc(['codex', 'setup', '--agent', 'alice', '--binary', 'svc'], {
      env: without.env,
      link: link(),
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('No `svc` on PATH');
    expect(existsSync(without.codex)).toBe(false);
  });

  it('adds svc mcp for the agent, keeps everything else, and is idempotent', async () => {
    const h = homesWithSvc();
    mkdirSync(join(h.env.HOME, '.codex'));
    writeFileSync(h.codex, PRIOR_TOML);
    const r = await svc(['codex', 'setup', '--agent', 'alice'], { env: h.env, link: link() });
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('Added [mcp_servers.svc-alice]');
    const text = readFileSync(h.codex, 'utf8');
    expect(text.startsWith(PRIOR_TOML)).toBe(true);
    const config = parse(text) as { mcp_servers: Record<string, unknown>; model: string };
    expect(config.mcp_servers['svc-alice']).toEqual({
      command: join(h.env.PATH, 'svc'),
      args: ['mcp', '--as', 'alice'],
      env: { SVC_HOME: h.env.SVC_HOME },
    });
    expect(config.mcp_servers.github).toBeDefined();

    const again = await svc(['codex', 'setup', '--agent', 'alice'], { env: h.env, link: link() });
    expect(again.stdout).toContain('Already set up');
    expect(readFileSync(h.codex, 'utf8')).toBe(text);
  });

  it('--json prints what it did as one object', async () => {
    const h = homesWithSvc();
    const r = await svc(['codex', 'setup', '--agent', 'alice', '--json'], { env: h.env, link: link() });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ config: h.codex, server: 'svc-alice', outcome: 'added' });
    const again = await svc(['codex', 'setup', '--agent', 'alice', '--json'], { env: h.env, link: link() });
    expect(JSON.parse(again.stdout)).toMatchObject({ outcome: 'unchanged' });
  });

  it('updates its own entry in place, keeping keys the user added to it', async () => {
    const h = homesWithSvc();
    mkdirSync(join(h.env.HOME, '.codex'));
    writeFileSync(
      h.codex,
      `${PRIOR_TOML}\n[mcp_servers.svc-alice]\ncommand = "/old/svc"\nargs = ["mcp", "--as", "alice"]\nstartup_timeout_sec = 20\n\n[tools]\nweb_search = true\n`,
    );
    const r = await svc(['codex', 'setup', '--agent', 'alice'], { env: h.env, link: link() });
    expect(r.stdout).toContain('Updated');
    const config = parse(readFileSync(h.codex, 'utf8')) as Record<string, Record<string, Record<string, unknown>>>;
    expect(config.mcp_servers!['svc-alice']).toEqual({
      command: h.svcPath,
      args: ['mcp', '--as', 'alice'],
      env: { SVC_HOME: h.env.SVC_HOME },
      startup_timeout_sec: 20,
    });
    expect(config.tools).toEqual({ web_search: true });
  });

  it('--migrate-legacy rewrites an older entry in place; without it the legacy entry is reported and kept', async () => {
    const legacy = `${PRIOR_TOML}\n[mcp_servers.svc]\ncommand = "svc"\nargs = ["mcp"]\nenv = { SVC_AGENT = "alice" }\n\n[tools]\nweb_search = true\n`;
    const h = homesWithSvc();
    mkdirSync(join(h.env.HOME, '.codex'));
    writeFileSync(h.codex, legacy);
    const plain = await svc(['codex', 'setup', '--agent', 'alice'], { env: h.env, link: link() });
    expect(plain.stdout).toContain('legacy entry [mcp_servers.svc] is still there');
    expect(Object.keys((parse(readFileSync(h.codex, 'utf8')) as { mcp_servers: object }).mcp_servers)).toEqual([
      'github',
      'svc',
      'svc-alice',
    ]);

    writeFileSync(h.codex, legacy);
    const migrated = await svc(['codex', 'setup', '--agent', 'alice', '--migrate-legacy'], {
      env: h.env,
      link: link(),
    });
    expect(migrated.stdout).toContain('Migrated the legacy entry to [mcp_servers.svc-alice]');
    const text = readFileSync(h.codex, 'utf8');
    // in place: between github and [tools], as the legacy entry was
    expect(text).toBe(
      `${PRIOR_TOML}\n[mcp_servers.svc-alice]\ncommand = ${JSON.stringify(h.svcPath)}\nargs = ["mcp", "--as", "alice"]\nenv = { SVC_HOME = ${JSON.stringify(h.env.SVC_HOME)} }\n\n[tools]\nweb_search = true\n`,
    );
    // and again: nothing to do
    await svc(['codex', 'setup', '--agent', 'alice', '--migrate-legacy'], { env: h.env, link: link() });
    expect(readFileSync(h.codex, 'utf8')).toBe(text);
  });

  it('--migrate-legacy with our entry there already removes the legacy one, its own keys carried over', async () => {
    // `[mcp_servers.svc]` beside `[mcp_servers.svc-bob]`: codex would start two svc servers for bob
    const legacyTable = '[mcp_servers.svc]\ncommand = "svc"\nargs = ["mcp"]\nstartup_timeout_sec = 20\n';
    const h = homesWithSvc();
    mkdirSync(join(h.env.HOME, '.codex'));
    writeFileSync(h.codex, `${PRIOR_TOML}\n${legacyTable}\n[tools]\nweb_search = true\n`);
    const plain = await svc(['codex', 'setup', '--agent', 'bob'], { env: h.env, link: link() });
    expect(plain.stdout).toContain('Added [mcp_servers.svc-bob]');
    expect(plain.stdout).toContain('legacy entry [mcp_servers.svc] is still there');
    const added = readFileSync(h.codex, 'utf8');
    const ours = `[mcp_servers.svc-bob]\ncommand = ${JSON.stringify(h.svcPath)}\nargs = ["mcp", "--as", "bob"]\nenv = { SVC_HOME = ${JSON.stringify(h.env.SVC_HOME)} }\n`;
    expect(added).toBe(`${PRIOR_TOML}\n${legacyTable}\n[tools]\nweb_search = true\n\n${ours}`);

    // a plain re-run changes nothing and still says so
    const again = await svc(['codex', 'setup', '--agent', 'bob'], { env: h.env, link: link() });
    expect(again.stdout).toContain('Already set up');
    expect(again.stdout).toContain('legacy entry [mcp_servers.svc] is still there');
    const json = await svc(['codex', 'setup', '--agent', 'bob', '--json'], { env: h.env, link: link() });
    expect(JSON.parse(json.stdout)).toMatchObject({ outcome: 'unchanged', legacy: 'svc' });
    expect(readFileSync(h.codex, 'utf8')).toBe(added);

    const migrated = await svc(['codex', 'setup', '--agent', 'bob', '--migrate-legacy'], { env: h.env, link: link() });
    expect(migrated.stderr).toBe('');
    expect(migrated.stdout).toBe(
      `Removed the legacy entry [mcp_servers.svc] from ${h.codex}: [mcp_servers.svc-bob] was there already; its startup_timeout_sec moved into it.\n`,
    );
    // the legacy table and the blank line before it gone, everything else byte for byte
    const text = readFileSync(h.codex, 'utf8');
    expect(text).toBe(`${PRIOR_TOML}\n[tools]\nweb_search = true\n\n${ours}startup_timeout_sec = 20\n`);
    expect((parse(text) as { mcp_servers: object }).mcp_servers).toEqual({
      github: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-github'] },
      'svc-bob': {
        command: h.svcPath,
        args: ['mcp', '--as', 'bob'],
        env: { SVC_HOME: h.env.SVC_HOME },
        startup_timeout_sec: 20,
      },
    });
    const done = await svc(['codex', 'setup', '--agent', 'bob', '--migrate-legacy'], { env: h.env, link: link() });
    expect(done.stdout).toBe(`Already set up: [mcp_servers.svc-bob] in ${h.codex}.\n`);
    expect(readFileSync(h.codex, 'utf8')).toBe(text);
  });

  it('a key our entry has already stays as ours; the legacy one goes with its table', async () => {
    const h = homesWithSvc();
    mkdirSync(join(h.env.HOME, '.codex'));
    const ours = `[mcp_servers.svc-bob]\ncommand = ${JSON.stringify(h.svcPath)}\nargs = ["mcp", "--as", "bob"]\nenv = { SVC_HOME = ${JSON.stringify(h.env.SVC_HOME)} }\nstartup_timeout_sec = 5\n`;
    writeFileSync(
      h.codex,
      `[mcp_servers.svc]\ncommand = "/usr/bin/svc"\nargs = ["mcp", "--as", "bob"]\nstartup_timeout_sec = 20\ntool_timeout_sec = 90 # slow tools\n\n${ours}`,
    );
    const r = await svc(['codex', 'setup', '--agent', 'bob', '--migrate-legacy', '--json'], {
      env: h.env,
      link: link(),
    });
    expect(JSON.parse(r.stdout)).toMatchObject({
      outcome: 'migrated',
      removed_legacy: 'svc',
      carried: ['tool_timeout_sec'],
    });
    // at the top of the file, the legacy table goes with the blank line after it
    expect(readFileSync(h.codex, 'utf8')).toBe(`${ours}tool_timeout_sec = 90 # slow tools\n`);

    // a value over several lines is not moved line by line: refused, nothing changed
    const multi = `[mcp_servers.svc]\ncommand = "svc"\nargs = ["mcp"]\ndisabled_tools = [\n  "send_message",\n]\n\n${ours}`;
    writeFileSync(h.codex, multi);
    const refused = await svc(['codex', 'setup', '--agent', 'bob', '--migrate-legacy'], { env: h.env, link: link() });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('move its keys disabled_tools into [mcp_servers.svc-bob] and delete it by hand');
    expect(readFileSync(h.codex, 'utf8')).toBe(multi);
  });

  it('a legacy entry that is not a [table] is refused with the entry to write by hand, in one line', async () => {
    const h = homesWithSvc();
    mkdirSync(join(h.env.HOME, '.codex'));
    const inline = `mcp_servers.svc = { command = "svc", args = ["mcp"] }\n${PRIOR_TOML}`;
    writeFileSync(h.codex, inline);
    const r = await svc(['codex', 'setup', '--agent', 'alice', '--migrate-legacy'], { env: h.env, link: link() });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `svc: error: The legacy entry mcp_servers.svc in ${h.codex} is not a [mcp_servers.svc] table, so svc does not rewrite it; replace it by hand with the table [mcp_servers.svc-alice] with command = ${JSON.stringify(h.svcPath)}, args = ["mcp", "--as", "alice"], env = { SVC_HOME = ${JSON.stringify(h.env.SVC_HOME)} }, each on its own line, keeping your other keys, then retry. (integration_config_invalid)\n`,
    );
    expect(readFileSync(h.codex, 'utf8')).toBe(inline);

    // with our entry there already, what is left to do is to delete the legacy one
    expect((await svc(['codex', 'setup', '--agent', 'alice'], { env: h.env, link: link() })).code).toBe(0);
    const withOurs = readFileSync(h.codex, 'utf8');
    const again = await svc(['codex', 'setup', '--agent', 'alice', '--migrate-legacy'], { env: h.env, link: link() });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('[mcp_servers.svc-alice] is there already');
    expect(again.stderr).toContain('delete the legacy entry by hand');
    expect(readFileSync(h.codex, 'utf8')).toBe(withOurs);
  });

  it('a config that is not TOML is left untouched', async () => {
    const h = homesWithSvc();
    mkdirSync(join(h.env.HOME, '.codex'));
    writeFileSync(h.codex, 'model = \n');
    const r = await svc(['codex', 'setup', '--agent', 'alice'], { env: h.env, link: link() });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('(integration_config_invalid)');
    expect(readFileSync(h.codex, 'utf8')).toBe('model = \n');
  });
});
