/**
 * Coding-assistant host integrations. The specification names them only `<host_a>`
 * (status line) and `<host_b>` (setup); the command names below are this build's choice.
 * The work is in ../integrations/ (claude.ts, codex.ts); see docs/integrations.md.
 */
import { resolve } from 'node:path';
import { Command } from 'commander';
import type { App, Run } from '../app.js';
import { CliError } from '../errors.js';
import {
  claudeTarget,
  install as installFeature,
  installStatusLine,
  type UninstallResult,
  uninstall as uninstallFeature,
  uninstallStatusLine,
  WAKE_HOOK,
} from '../integrations/claude.js';
import { codexConfigPath, codexSetup, entryFor } from '../integrations/codex.js';
import { notExecutable, onPath, shellQuote } from '../integrations/files.js';
import { action, withJson } from '../options.js';

export const HOST_A = 'claude';
export const HOST_B = 'codex';

/**
 * --binary, else the `svc` found on PATH: what the host will run, as an absolute path. A
 * bare name (`--binary svc`) is looked up on PATH as a shell would, not taken for a file in
 * the current directory.
 */
async function svcBinary(run: Run, explicit: string | undefined): Promise<string> {
  if (explicit?.includes('/')) {
    const path = resolve(explicit);
    // the host would run it later and fail there, out of sight: refuse it now, as a missing svc is
    const why = await notExecutable(path);
    if (why) {
      throw new CliError(
        'binary_not_found',
        `--binary ${path}: ${why}; pass the path of the svc binary (nothing was written).`,
      );
    }
    return path;
  }
  const name = explicit ?? 'svc';
  const found = await onPath(name, run.env);
  if (!found) {
    throw new CliError(
      'binary_not_found',
      `No \`${name}\` on PATH; pass the path of the svc binary with --binary PATH.`,
    );
  }
  return resolve(found);
}

function uninstalled(r: UninstallResult): string {
  return {
    restored: `Restored ${r.settings} as it was before the install.`,
    removed: `Removed ${r.settings} (the install created it).`,
    reverted: `Took svc's entry out of ${r.settings} (the prior one is back); your other changes stay.`,
    kept: `The entry in ${r.settings} is no longer svc's; left it alone.`,
    gone: `${r.settings} no longer exists; nothing to restore.`,
  }[r.outcome];
}

export function integrationCommands(app: App): Command[] {
  const hostA = new Command(HOST_A).description(`${HOST_A} integration: the status line and the wake-on-mail hook`);
  const install = new Command('install-statusline')
    .description('install the svc status line (agent, unread count, relay state) in the user settings')
    .option('--binary <path>', 'run `<path> statusline` instead of the faster shell script that ships with svc');
  const uninstall = new Command('uninstall-statusline').description(
    'remove the status line, restoring any prior command',
  );
  action(app, install, async (run) => {
    const binary = run.opts<{ binary?: string }>().binary;
    const r = await installStatusLine(
      claudeTarget(run.env, app.home),
      binary ? await svcBinary(run, binary) : undefined,
    );
    run.out(
      `Installed the svc status line in ${r.settings}: ${r.command}\n${
        r.prior_command
          ? `The prior status line (${r.prior_command}) comes back with \`svc ${HOST_A} uninstall-statusline\`.\n`
          : ''
      }${r.backup ? `Backup of the previous file: ${r.backup}\n` : ''}`,
    );
  });
  action(app, uninstall, async (run) => {
    run.out(`${uninstalled(await uninstallStatusLine(claudeTarget(run.env, app.home)))}\n`);
  });
  const installWake = new Command('install-wake-hook')
    .description('wake-on-mail: a Stop hook that tells the assistant about new mail before it goes idle (opt-in)')
    .option('--binary <path>', 'the hook runs `<path> wake-hook` (default: the svc found on PATH)');
  const uninstallWake = new Command('uninstall-wake-hook').description('remove the wake-on-mail hook');
  action(app, installWake, async (run) => {
    const binary = await svcBinary(run, run.opts<{ binary?: string }>().binary);
    const r = await installFeature(
      claudeTarget(run.env, app.home, 'wake'),
      WAKE_HOOK,
      `${shellQuote(binary)} wake-hook`,
    );
    run.out(
      `Installed the wake-on-mail hook in ${r.settings}: ${r.command}\n${r.backup ? `Backup of the previous file: ${r.backup}\n` : ''}`,
    );
  });
  action(app, uninstallWake, async (run) => {
    const r = await uninstallFeature(claudeTarget(run.env, app.home, 'wake'), WAKE_HOOK);
    run.out(`${uninstalled(r)}\n`);
  });
  hostA.addCommand(install).addCommand(uninstall).addCommand(installWake).addCommand(uninstallWake);

  const hostB = new Command(HOST_B).description(`${HOST_B} integration`);
  const setup = withJson(
    new Command('setup')
      .description(`register \`svc mcp\` for an agent as an MCP server of ${HOST_B} (idempotent)`)
      .requiredOption('--agent <agent_number>', 'public agent number')
      .option('--binary <path>', 'the MCP server runs `<path> mcp` (default: the svc found on PATH)')
      .option('--migrate-legacy', 'migrate a legacy configuration', false),
  );
  action(app, setup, async (run) => {
    const o = run.opts<{ agent: string; binary?: string; migrateLegacy: boolean }>();
    // the host starts the command itself, with a PATH of its own: only an absolute path is
    // sure to start, so without one there is nothing to write
    const binary = await svcBinary(run, o.binary);
    // the agent must exist here: the daemon knows it by name or number
    const agent = await (await run.link()).getAgent(o.agent);
    const r = await codexSetup({
      path: codexConfigPath(run.env),
      svcHome: app.home,
      agent: agent.agent_number,
      // the host runs svc with its own environment: name this SVC_HOME unless it is the default
      entry: entryFor(agent.agent_number, binary, run.env.SVC_HOME ? app.home : undefined),
      migrateLegacy: o.migrateLegacy,
    });
    const what = {
      added: 'Added',
      updated: 'Updated',
      unchanged: 'Already set up:',
      migrated: 'Migrated the legacy entry to',
    }[r.outcome];
    const carried = r.carried?.length ? `; its ${r.carried.join(', ')} moved into it` : '';
    run.print(r, () =>
      r.removed_legacy
        ? `Removed the legacy entry [mcp_servers.${r.removed_legacy}] from ${r.config}: [mcp_servers.${r.server}] was there already${carried}.\n`
        : `${what} [mcp_servers.${r.server}] in ${r.config}.\n${
            r.legacy
              ? `A legacy entry [mcp_servers.${r.legacy}] is still there (a second svc server for this agent); rerun with --migrate-legacy to remove it, its own keys moved into [mcp_servers.${r.server}].\n`
              : ''
          }`,
    );
  });
  hostB.addCommand(setup);
  return [hostA, hostB];
}
