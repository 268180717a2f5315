/**
 * Local agents: $SVC_HOME/agents/<name>/agent.json (public facts and the key rotation
 * counter; no secrets — the seed and API key live in the vault) beside archive.db.
 * An agent.json that cannot be read (damaged, not an agent config, unreadable) is
 * reported as AgentConfigUnusableError, never written to or "repaired": the daemon keeps
 * that agent out of service and its name taken.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { LocalAgent } from '../client/api.js';
import { AgentFileUnusableError, DaemonError, LOOKED_AT_AGAIN } from '../errors.js';
import { isLocalName } from '../paths.js';

export interface AgentConfig extends LocalAgent {
  /** X25519 rotation counter of deriveIdentityKeys */
  rotation: number;
}

/** What an agent.json must hold: every field the daemon and its answers rely on. */
const AgentConfigSchema = Type.Composite([LocalAgent, Type.Object({ rotation: Type.Integer({ minimum: 0 }) })]);

export const localAgent = (c: AgentConfig): LocalAgent => {
  const { rotation: _rotation, ...rest } = c;
  return rest;
};

/**
 * An agent.json this svc cannot use: `config_invalid`, naming the file, what is wrong with
 * it and what to do (`hint`). The file is left as it is.
 */
export class AgentConfigUnusableError extends AgentFileUnusableError {
  constructor(file: string, problem: string, dir: string, cause?: unknown) {
    // giving the agent up forgets it here only: `svc deregister` cannot revoke it (its config
    // is what names its relay), so its relay's operator must
    const hint = `restore it from a backup (${LOOKED_AT_AGAIN}); or give the agent up: svc deregister ${basename(dir)} --local sets its directory ${dir} aside (its archive is in it) and, if it was enrolled on a relay, ask that relay's operator to revoke it (svc-relay agent revoke)`;
    super('config_invalid', `The agent config ${file} ${problem}; it was not changed: ${hint}.`, file, hint, cause);
    this.name = 'AgentConfigUnusableError';
  }
}

/** A stored agent: its config, or why its agent.json cannot be used. */
export type StoredAgent = { name: string; config: AgentConfig } | { name: string; error: AgentConfigUnusableError };

export class AgentStore {
  readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  agentDir(name: string): string {
    if (!isLocalName(name)) throw new DaemonError('validation_failed', `invalid agent name ${name}`);
    return join(this.dir, name);
  }

  archivePath(name: string): string {
    return join(this.agentDir(name), 'archive.db');
  }

  has(name: string): boolean {
    return existsSync(join(this.agentDir(name), 'agent.json'));
  }

  #names(): string[] {
    return readdirSync(this.dir, { withFileTypes: true })
      .filter((d) => d.isDirectory() && isLocalName(d.name) && existsSync(join(this.dir, d.name, 'agent.json')))
      .map((d) => d.name);
  }

  /** Whether any agent is registered here (without reading their configs). */
  any(): boolean {
    return this.#names().length > 0;
  }

  /** Every stored agent by name, each with its config or why it cannot be read. */
  entries(): StoredAgent[] {
    return this.#names()
      .sort((a, b) => a.localeCompare(b))
      .map((name) => {
        try {
          return { name, config: this.get(name) };
        } catch (err) {
          if (err instanceof AgentConfigUnusableError) return { name, error: err };
          throw err;
        }
      });
  }

  /** The agents whose agent.json can be read, by name (see entries for the others). */
  list(): AgentConfig[] {
    return this.entries().flatMap((e) => ('config' in e ? [e.config] : []));
  }

  /** An agent's config; unknown_agent without an agent.json, AgentConfigUnusableError for one that cannot be used. */
  get(name: string): AgentConfig {
    const dir = this.agentDir(name);
    const file = join(dir, 'agent.json');
    if (!existsSync(file)) throw new DaemonError('unknown_agent', `No local agent ${name}.`);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new AgentConfigUnusableError(file, `could not be read (${(err as Error).message})`, dir, err);
    }
    let config: unknown;
    try {
      config = JSON.parse(text);
    } catch (err) {
      throw new AgentConfigUnusableError(file, `is damaged (${(err as Error).message})`, dir, err);
    }
    if (!Value.Check(AgentConfigSchema, config)) {
      const first = Value.Errors(AgentConfigSchema, config).First();
      const where = first?.path ? `${first.path.slice(1).replace(/\//g, '.')}: ` : '';
      throw new AgentConfigUnusableError(file, `is damaged (${where}${first?.message ?? 'not an agent config'})`, dir);
    }
    // a file copied from another agent's directory would make two agents of one name
    if (config.name !== name) {
      throw new AgentConfigUnusableError(
        file,
        `names another agent (${JSON.stringify(config.name)}, not ${name})`,
        dir,
      );
    }
    return config;
  }

  save(config: AgentConfig): void {
    const dir = this.agentDir(config.name);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = join(dir, 'agent.json');
    writeFileSync(`${file}.tmp`, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
    chmodSync(`${file}.tmp`, 0o600);
    renameSync(`${file}.tmp`, file);
  }

  /**
   * Forgets an agent locally. Its directory (with the archive) is renamed aside rather than
   * deleted, so a mistaken deregister does not destroy message history.
   */
  retire(name: string): string {
    const dir = this.agentDir(name);
    const aside = join(this.dir, `.deregistered-${name}-${Date.now()}`);
    renameSync(dir, aside);
    return aside;
  }
}
