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
 * `--migrate-legacy` rewrites it in place (same position) as the new entry, or, when the
 * new entry is there already, removes it and carries its keys the new one lacks into it;
 * without it a legacy entry is left alone and reported (on every run while it is there).
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

/** The entry as one line, for a message (a table cannot be written on one). */
function oneLine(name: string, e: McpEntry): string {
  const lines = block(name, e).trimEnd().split('\n');
  return `${lines[0]} with ${lines.slice(1).join(', ')}, each on its own line`;
}

const HEADER = /^\s*\[\[?\s*(.*?)\s*\]\]?\s*(#.*)?$/;
/** The key of a `key = value` line (bare or quoted; not dotted), or undefined. */
const KEY_LINE = /^\s*(?:([A-Za-z0-9_-]+)|"((?:[^"\\]|\\.)*)"|'([^']*)')\s*=/;

function lineKey(line: string): string | undefined {
  const m = line.match(KEY_LINE);
  if (!m) return undefined;
  return m[2] !== undefined ? (JSON.parse(`"${m[2]}"`) as string) : (m[1] ?? m[3]);
}

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

type Servers = Record<
  string,
  { command?: unknown; args?: unknown; env?: Record<string, unknown>; [key: string]: unknown }
>;

/** Keys of an entry that svc writes: the rest are the user's. */
const SVC_KEYS = new Set(['command', 'args', 'env']);

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
  /** a legacy entry removed because ours was there already (--migrate-legacy) */
  removed_legacy?: string;
  /** the keys of that legacy entry carried into ours (ours lacked them) */
  carried?: string[];
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
  const legacyRange = old === undefined ? undefined : tableRange(lines, old);
  if (old && opts.migrateLegacy && !legacyRange) {
    // written as an inline table or dotted keys: too clever to rewrite safely
    throw new CliError(
      'integration_config_invalid',
      existing
        ? `The legacy entry mcp_servers.${old} in ${path} is not a [mcp_servers.${old}] table, so svc does not remove it; [mcp_servers.${name}] is there already: move any keys of yours from the legacy entry into it and delete the legacy entry by hand.`
        : `The legacy entry mcp_servers.${old} in ${path} is not a [mcp_servers.${old}] table, so svc does not rewrite it; replace it by hand with the table ${oneLine(name, entry)}, keeping your other keys, then retry.`,
    );
  }
  // the legacy entry's own keys that ours lacks: they move into ours when it is removed
  const carried =
    existing && old && opts.migrateLegacy
      ? Object.keys(servers[old]!).filter((k) => !SVC_KEYS.has(k) && !Object.hasOwn(servers[name] ?? {}, k))
      : [];
  if (existing) {
    replace(existing);
    outcome = 'updated';
    if (old && opts.migrateLegacy) {
      // two servers for one agent: the legacy one goes, its keys ours lacks go into ours
      const from = tableRange(lines, old)!;
      const moved = lines.slice(from.start + 1, from.end).filter((l, i, all) => {
        const k = lineKey(l);
        // only its own keys, not those of its subtables
        const inSubtable = all.slice(0, i).some((p) => headerKey(p) !== undefined);
        return k !== undefined && !inSubtable && carried.includes(k);
      });
      // the blank lines before it go with it (after it, at the top of the file), so the
      // tables around it stay as they were spaced
      let { start, end: stop } = from;
      while (start > 0 && lines[start - 1]!.trim() === '') start--;
      if (start === 0) {
        start = from.start;
        while (stop < lines.length && lines[stop]!.trim() === '') stop++;
      }
      lines.splice(start, stop - start);
      const at = tableRange(lines, name)!;
      const sub = lines.slice(at.start + 1, at.end).findIndex((l) => headerKey(l) !== undefined);
      let end = sub < 0 ? at.end : at.start + 1 + sub;
      while (end > at.start + 1 && lines[end - 1]!.trim() === '') end--;
      lines.splice(end, 0, ...moved);
      outcome = 'migrated';
    } else {
      legacy = old;
    }
  } else if (old && opts.migrateLegacy) {
    replace(legacyRange!);
    outcome = 'migrated';
  } else {
    if (lines.length && lines[lines.length - 1]!.trim() !== '') lines.push('');
    lines.push(...ours);
    outcome = 'added';
    legacy = old;
  }
  const removed = outcome === 'migrated' && existing ? old : undefined;
  const after = `${lines.join('\n')}\n`;
  // a legacy entry left there is said on every run, not only the one that added ours
  if (after === before) return { config: path, server: name, outcome: 'unchanged', ...(legacy ? { legacy } : {}) };

  // the result must parse and hold exactly the entry we meant (and the keys carried into
  // it), the legacy entry gone when it was removed; a line-wise edit of a value written over
  // several lines would fail here
  let checked: Servers | undefined;
  try {
    checked = (parseToml(after) as { mcp_servers?: Servers }).mcp_servers ?? {};
  } catch {
    checked = undefined;
  }
  const check = checked?.[name];
  if (
    removed &&
    (checked?.[removed] !== undefined ||
      carried.some((k) => JSON.stringify(check?.[k]) !== JSON.stringify(servers[removed]![k])))
  ) {
    throw new CliError(
      'integration_config_invalid',
      `Could not move the legacy entry [mcp_servers.${removed}] into [mcp_servers.${name}] in ${path} safely (nothing was changed); ${carried.length ? `move its keys ${carried.join(', ')} into [mcp_servers.${name}] and ` : ''}delete it by hand.`,
    );
  }
  const got = { command: check?.command, args: check?.args, ...(check?.env ? { env: check.env } : {}) };
  if (JSON.stringify(got) !== JSON.stringify(entry)) {
    throw new CliError(
      'integration_config_invalid',
      `Could not place [mcp_servers.${name}] in ${path} safely (nothing was changed); add the table ${oneLine(name, entry)} by hand.`,
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
    ...(removed ? { removed_legacy: removed, carried } : {}),
    ...(saved ? { backup: saved } : {}),
  };
}
