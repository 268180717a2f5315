/**
 * Where each top-level command lives, loaded on demand: `svc send` imports the module of
 * `send` and nothing else (scripts call svc in loops, and every module pulls in its own
 * dependencies). A word not listed here loads every module, so a command missing from the
 * table still works, only slower; the test in cli/test/command-modules.test.ts keeps the
 * table complete.
 */
import type { Command } from 'commander';
import type { App } from './app.js';

type CommandModule = (app: App) => Promise<Command[]>;

const MODULES = {
  abuse: async (app) => [(await import('./commands/abuse.js')).abuseCommand(app)],
  agent: async (app) => [(await import('./commands/agent.js')).agentCommand(app)],
  auth: async (app) => [(await import('./commands/auth.js')).authCommand(app)],
  cache: async (app) => [(await import('./commands/cache.js')).cacheCommand(app)],
  config: async (app) => [(await import('./commands/config.js')).configCommand(app)],
  contacts: async (app) => [(await import('./commands/contacts.js')).contactsCommand(app)],
  context: async (app) => [(await import('./commands/context.js')).contextCommand(app)],
  conv: async (app) => [(await import('./commands/conv.js')).convCommand(app)],
  core: async (app) => (await import('./commands/core.js')).coreCommands(app),
  dashboard: async (app) => {
    const m = await import('./commands/dashboard.js');
    return [m.dashboardCommand(app), m.desktopCommand(app)];
  },
  deployment: async (app) => [(await import('./commands/deployment.js')).deploymentCommand(app)],
  discover: async (app) => [(await import('./commands/discover.js')).discoverCommand(app)],
  identity: async (app) => (await import('./commands/identity.js')).identityCommands(app),
  integration: async (app) => (await import('./commands/integration.js')).integrationCommands(app),
  keys: async (app) => [(await import('./commands/keys.js')).keysCommand(app)],
  msg: async (app) => [(await import('./commands/msg.js')).msgCommand(app)],
  recover: async (app) => [(await import('./commands/recover.js')).recoverCommand(app)],
  space: async (app) => [(await import('./commands/space.js')).spaceCommand(app)],
} satisfies Record<string, CommandModule>;

export type ModuleName = keyof typeof MODULES;

/** Top-level command name → the module that defines it. */
export const COMMAND_MODULE: Readonly<Record<string, ModuleName>> = {
  abuse: 'abuse',
  account: 'identity',
  agent: 'agent',
  auth: 'auth',
  cache: 'cache',
  claude: 'integration',
  codex: 'integration',
  config: 'config',
  contacts: 'contacts',
  context: 'context',
  conv: 'conv',
  dashboard: 'dashboard',
  deployment: 'deployment',
  deregister: 'identity',
  desktop: 'dashboard',
  discover: 'discover',
  doctor: 'identity',
  inbox: 'core',
  init: 'core',
  keys: 'keys',
  mcp: 'core',
  msg: 'msg',
  read: 'core',
  recover: 'recover',
  register: 'core',
  reply: 'core',
  send: 'core',
  space: 'space',
  star: 'identity',
  start: 'identity',
  stop: 'identity',
  sync: 'identity',
  tui: 'identity',
  watch: 'core',
  whoami: 'identity',
};

export const MODULE_NAMES = Object.keys(MODULES) as ModuleName[];

/** The commands a module defines. */
export function loadModule(name: ModuleName, app: App): Promise<Command[]> {
  return MODULES[name](app);
}

/**
 * The commands to register for a run whose first word is `word`: only the one it names
 * when the table knows it, else all (help, completion, unknown words and their suggestions).
 */
export async function loadCommands(app: App, word: string | undefined): Promise<Command[]> {
  const module = word !== undefined && Object.hasOwn(COMMAND_MODULE, word) ? COMMAND_MODULE[word] : undefined;
  if (module) return (await loadModule(module, app)).filter((c) => c.name() === word);
  const all = await Promise.all(MODULE_NAMES.map((m) => loadModule(m, app)));
  return all.flat();
}
