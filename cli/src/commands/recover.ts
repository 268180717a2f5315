/** recover replay-consumers | reset-consumers | reset-db | stale-test-vault: local repair (not built yet). */
import { Command } from 'commander';
import type { App } from '../app.js';
import { notBuilt, withJson, yes } from '../options.js';

export function recoverCommand(app: App): Command {
  const recover = new Command('recover').description('repair local message state (not built yet)');
  for (const [name, description] of [
    ['replay-consumers', 'delete the durable consumers and replay retained history'],
    ['reset-consumers', 'delete the durable consumers'],
    ['reset-db', 'wipe the local database'],
  ] as const) {
    const c = yes(new Command(name).description(description).option('--agent <agent>', 'agent (unless SVC_AGENT)'));
    notBuilt(app, c, `svc recover ${name}`);
    recover.addCommand(c);
  }
  const stale = withJson(
    new Command('stale-test-vault')
      .description('delete a stale test vault')
      .option('--confirm-digest <digest>', 'delete only with the exact digest of a fresh preview'),
  );
  notBuilt(app, stale, 'svc recover stale-test-vault');
  return recover.addCommand(stale);
}
