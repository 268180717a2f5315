/** recover reset-db (built) | replay-consumers | reset-consumers | stale-test-vault (not built yet): local repair. */
import { Command } from 'commander';
import type { App } from '../app.js';
import { CliError } from '../errors.js';
import { action, notBuilt, withJson, yes } from '../options.js';

export function recoverCommand(app: App): Command {
  const recover = new Command('recover').description('repair local message state');
  const agentOption = (c: Command) => c.option('--agent <agent>', 'agent (unless SVC_AGENT)');

  const resetDb = withJson(
    yes(
      agentOption(
        new Command('reset-db').description(
          "set the agent's archive aside and start an empty one (pinned peer keys are kept; its messages stay in the file set aside)",
        ),
      ),
    ),
  );
  action(app, resetDb, async (run) => {
    const o = run.opts<{ agent?: string; yes: boolean }>();
    const agent = o.agent?.trim() || run.env.SVC_AGENT?.trim();
    if (!agent)
      throw new CliError('agent_required', 'Name the agent whose archive to reset: --agent NAME (or SVC_AGENT).');
    const link = await run.link();
    if (!o.yes) {
      await run.confirm(
        `Set aside the archive of ${agent} and start an empty one? Its messages stay in the file set aside, not in svc.`,
      );
    }
    const r = await link.resetArchive(agent);
    run.print(r, () =>
      [
        `Set aside ${r.agent}'s archive as ${r.set_aside} and started an empty one.`,
        r.pins_kept === null
          ? 'The old file could not be read: no pinned peer key was kept (each peer is pinned again at its next message, as a first contact).'
          : `${r.pins_kept} pinned peer key${r.pins_kept === 1 ? '' : 's'} kept.`,
        'New messages arrive in the new archive; what the old one held is only in the file set aside.',
        '',
      ].join('\n'),
    );
  });
  recover.addCommand(resetDb);

  for (const [name, description] of [
    ['replay-consumers', 'delete the durable consumers and replay retained history'],
    ['reset-consumers', 'delete the durable consumers'],
  ] as const) {
    const c = yes(agentOption(new Command(name).description(description)));
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
