/**
 * Coding-assistant host integrations. The specification names them only `<host_a>`
 * (status line) and `<host_b>` (setup); the command names below are this build's choice.
 */
import { Command } from 'commander';
import type { App } from '../app.js';
import { notBuilt } from '../options.js';

export const HOST_A = 'claude';
export const HOST_B = 'codex';

export function integrationCommands(app: App): Command[] {
  const hostA = new Command(HOST_A).description(`${HOST_A} integration: the status line`);
  const install = new Command('install-statusline')
    .description('install the svc status line')
    .option('--binary <path>', 'path to the svc binary (default: resolved on PATH)');
  const uninstall = new Command('uninstall-statusline').description(
    'remove the status line, restoring any prior command',
  );
  notBuilt(app, install, `svc ${HOST_A} install-statusline`);
  notBuilt(app, uninstall, `svc ${HOST_A} uninstall-statusline`);
  hostA.addCommand(install).addCommand(uninstall);

  const hostB = new Command(HOST_B).description(`${HOST_B} integration`);
  const setup = new Command('setup')
    .description('configure the host to use svc')
    .requiredOption('--agent <agent_number>', 'public agent number')
    .option('--migrate-legacy', 'migrate a legacy configuration', false);
  notBuilt(app, setup, `svc ${HOST_B} setup`);
  hostB.addCommand(setup);
  return [hostA, hostB];
}
