/**
 * Local agents: $SVC_HOME/agents/<name>/agent.json (public facts and the key rotation
 * counter; no secrets — the seed and API key live in the vault) beside archive.db.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LocalAgent } from '../client/api.js';
import { DaemonError } from '../errors.js';
import { isLocalName } from '../paths.js';

export interface AgentConfig extends LocalAgent {
  /** X25519 rotation counter of deriveIdentityKeys */
  rotation: number;
}

export const localAgent = (c: AgentConfig): LocalAgent => {
  const { rotation: _rotation, ...rest } = c;
  return rest;
};

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

  list(): AgentConfig[] {
    return this.#names()
      .map((name) => this.get(name))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  get(name: string): AgentConfig {
    const file = join(this.agentDir(name), 'agent.json');
    if (!existsSync(file)) throw new DaemonError('unknown_agent', `No local agent ${name}.`);
    return JSON.parse(readFileSync(file, 'utf8')) as AgentConfig;
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
