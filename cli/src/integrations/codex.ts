/**
 * `svc codex setup --agent NUMBER [--migrate-legacy]`: registers `svc mcp --as NUMBER`
 * as an MCP server of the assistant (`$CODEX_HOME/config.toml`, else
 * `~/.codex/config.toml`), under `[mcp_servers.svc-NUMBER]`. The file is edited as text,
 * one table replaced or appended, so comments, order and every other setting stay as the
 * user wrote them; it is parsed before (a file that does not parse is left alone) and
 * after (the result must hold exactly our entry). Running it again changes nothing.
 *
 * A legacy entry is one an older svc wrote: the table `[mcp_servers.svc]`, or any
 * `mcp_servers` table that runs `svc mcp` for this agent under another name.
 * `--migrate-legacy` rewrites it in place (same position) as the new entry; without it a
 * legacy entry is left alone and reported.
 */
import { homedir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { CliError } from '../errors.js';
import { backup, ensureDir, readIfExists, writeAtomic } from './files.js';

export function codexConfigPath(env: NodeJS.ProcessEnv): string {
  return join(env.CODEX_HOME || join(env.HOME || homedir(), '.codex'), 'config.toml');
}

export const serverName = (agent: string) => `svc-${agent}`;

const BARE_KEY = /^[A-Za-z0-9_-]+$/;
const tomlKey = (key: string) => (BARE_KEY.test(key) ? key : tomlString(key));
/** A TOML basic string (JSON's escapes are TOML's for these characters). */
const tomlString = (s: string) =>
  JSON.stringify(s).replace(/[\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

export interface McpEntry {
  command: string;
  args: string[];
  env?: Record<string, string>;
}

export function entryFor(agent: string, binary: string, svcHome?: string): McpEntry {
  return { command: binary, args: ['mcp', '--as', agent], ...(svcHome ? { env: { SVC_HOME: svcHome } } : {}) };
}

function block(name: string, e: McpEntry): string {
  const lines = [
    `[mcp_servers.${tomlKey(name)}]`,
    `command = ${tomlString(e.command)}`,
    `args = [${e.args.map(tomlString).join(', ')}]`,
  ];
  if (e.env) {
    lines.push(
      `env = { ${Object.entries(e.env)
        .map(([k, v]) => `${tomlKey(k)} = ${tomlString(v)}`)
        .join(', ')} }`,
    );
  }
  return `${lines.join('\n')}\n`;
}

const HEADER = /^\s*\[\[?\s*(.*?)\s*\]\]?\s*(#.*)?$/;

/** The dotted key of a table header line, split (quoted parts unquoted), or undefined. */
function headerKey(line: string): string[] | undefined {
  const m = line.match(HEADER);
  if (!m) return undefined;
  const parts: string[] = [];
  const re = /\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*(?:\.|$)/y;
  let rest = m[1]!;
  while (rest.length) {
    re.lastIndex = 0;
    const p = re.exec(rest);
    if (!p) return undefined;
    parts.push(p[1] !== undefined ? (JSON.parse(`"${p[1]}"`) as string) : (p[2] ?? p[3]!));
    rest = rest.slice(p[0].length);
  }
  return parts;
}

/** Lines [start, end) of the table mcp_servers.<name> and its subtables; trailing blank lines excluded. */
function tableRange(lines: string[], name: string): { start: number; end: number } | undefined {
  const isOurs = (k: string[] | undefined) => k !== undefined && k[0] === 'mcp_servers' && k[1] === name;
  const start = lines.findIndex((l) => {
    const k = headerKey(l);
    return isOurs(k) && k!.length === 2;
  });
  if (start < 0) return undefined;
  let end = start + 1;
  while (end < lines.length) {
    const k = headerKey(lines[end]!);
    if (k !== undefined && !isOurs(k)) break;
    end++;
  }
  while (end > start + 1 && lines[end - 1]!.trim() === '') end--;
  return { start, end };
}

type Servers = Record<string, { command?: unknown; args?: unknown; env?: Record<string, unknown> }>;

function parseConfig(text: string, path: string): { mcp_servers?: Servers } {
  try {
    return parseToml(text) as { mcp_servers?: Servers };
  } catch (err) {
    throw new CliError(
      'integration_config_invalid',
      `${path} is not valid TOML (${(err as Error).message.split('\n')[0]}); fix it by hand (nothing was changed), then retry.`,
    );
  }
}

/** The name of a legacy entry for this agent, if any. */
function legacyName(servers: Servers, agent: string, name: string): string | undefined {
  const runsSvcMcp = (s: Servers[string]) => {
    const args = Array.isArray(s.args) ? s.args.map(String) : [];
    return typeof s.command === 'string' && /(^|\/)svc(\.js)?$/.test(s.command) && args.includes('mcp');
  };
  const forAgent = (s: Servers[string]) => {
    const args = Array.isArray(s.args) ? s.args.map(String) : [];
    const i = args.indexOf('--as');
    return (i >= 0 && args[i + 1] === agent) || s.env?.SVC_AGENT === agent;
  };
  const noAgent = (s: Servers[string]) =>
    !(Array.isArray(s.args) && s.args.map(String).includes('--as')) && s.env?.SVC_AGENT === undefined;
  // the single-agent entry of older builds: taken unless it names another agent
  if (servers.svc && runsSvcMcp(servers.svc) && (noAgent(servers.svc) || forAgent(servers.svc))) return 'svc';
  return Object.keys(servers).find((k) => k !== name && runsSvcMcp(servers[k]!) && forAgent(servers[k]!));
}

export interface SetupResult {
  config: string;
  server: string;
  outcome: 'added' | 'updated' | 'unchanged' | 'migrated';
  /** a legacy entry left alone (without --migrate-legacy) */
  legacy?: string;
  backup?: string;
}

export async function codexSetup(opts: {
  path: string;
  svcHome: string;
  agent: string;
  entry: McpEntry;
  migrateLegacy: boolean;
}): Promise<SetupResult> {
  const { path, agent, entry } = opts;
  const name = serverName(agent);
  const bytes = await readIfExists(path);
  const before = bytes?.toString('utf8') ?? '';
  const servers = parseConfig(before, path).mcp_servers ?? {};
  const lines = before === '' ? [] : before.replace(/\n$/, '').split('\n');
  const ours = block(name, entry).replace(/\n$/, '').split('\n');

  let outcome: SetupResult['outcome'];
  let legacy: string | undefined;
  const existing = tableRange(lines, name);
  const old = legacyName(servers, agent, name);
  /** our lines in place of the table at `range`, keeping the user's other keys of it */
  const replace = (range: { start: number; end: number }) => {
    const kept: string[] = [];
    let inEnv = false;
    for (const line of lines.slice(range.start + 1, range.end)) {
      const k = headerKey(line);
      if (k !== undefined) inEnv = k.length === 3 && k[2] === 'env';
      if (inEnv || /^\s*(command|args|env)\s*=/.test(line)) continue;
      kept.push(line);
    }
    lines.splice(range.start, range.end - range.start, ...ours, ...kept);
  };
  if (existing) {
    replace(existing);
    outcome = 'updated';
  } else if (old && opts.migrateLegacy) {
    const range = tableRange(lines, old);
    if (!range) {
      // written as an inline table or dotted keys: too clever to rewrite safely
      throw new CliError(
        'integration_config_invalid',
        `The legacy entry mcp_servers.${old} in ${path} is not a [mcp_servers.${old}] table; move it by hand, then retry.`,
      );
    }
    replace(range);
    outcome = 'migrated';
  } else {
    if (lines.length && lines[lines.length - 1]!.trim() !== '') lines.push('');
    lines.push(...ours);
    outcome = 'added';
    legacy = old;
  }
  const after = `${lines.join('\n')}\n`;
  if (after === before) return { config: path, server: name, outcome: 'unchanged' };

  // the result must parse and hold exactly the entry we meant, the rest as it was
  const check = parseConfig(after, path).mcp_servers?.[name];
  const got = { command: check?.command, args: check?.args, ...(check?.env ? { env: check.env } : {}) };
  if (JSON.stringify(got) !== JSON.stringify(entry)) {
    throw new CliError(
      'integration_config_invalid',
      `Could not place [mcp_servers.${name}] in ${path} safely; add it by hand:\n${block(name, entry)}`,
    );
  }
  const saved = bytes !== undefined ? await backup(opts.svcHome, basename(path), bytes) : undefined;
  await ensureDir(dirname(path));
  await writeAtomic(path, after);
  return {
    config: path,
    server: name,
    outcome,
    ...(legacy ? { legacy } : {}),
    ...(saved ? { backup: saved } : {}),
  };
}
