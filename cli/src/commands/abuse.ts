/** abuse block | unblock | mute | unmute | blocked | muted | report (the daemon's block, mute and report operations). */
import { PROFILE_LIMITS, type RelationEntry } from '@svc/shared';
import { Command } from 'commander';
import type { App } from '../app.js';
import { usageError } from '../errors.js';
import { action, common } from '../options.js';
import { table } from '../output.js';

/** The reason of an abuse report: 10 to 2000 characters after trimming, counted as the relay counts them. */
export function checkReportReason(reason: string): string {
  const trimmed = reason.trim();
  const length = [...trimmed].length;
  if (length < PROFILE_LIMITS.reportReasonMin || length > PROFILE_LIMITS.reportReasonMax) {
    throw usageError(
      `--reason must be ${PROFILE_LIMITS.reportReasonMin} to ${PROFILE_LIMITS.reportReasonMax} characters after trimming; it has ${length}.`,
    );
  }
  return trimmed;
}

const relationTable = (entries: RelationEntry[], empty: string) =>
  table(
    [
      ['agent number', 'agent_number'],
      ['display name', 'display_name'],
      ['since', 'since'],
      ['agent id', 'agent_id'],
    ],
    entries,
    empty,
  );

export function abuseCommand(app: App): Command {
  const abuse = new Command('abuse').description('block, mute and report agents');

  const verbs = [
    ['block', true, 'block', 'Blocked', 'block an agent: the relay refuses its messages to you'],
    ['unblock', false, 'block', 'Unblocked', 'lift a block'],
    ['mute', true, 'mute', 'Muted', 'mute an agent: its messages arrive without notification'],
    ['unmute', false, 'mute', 'Unmuted', 'lift a mute'],
  ] as const;
  for (const [name, add, relation, done, description] of verbs) {
    const cmd = common(new Command(name).description(description).argument('<agent_id>', 'agent number or agent id'));
    action(app, cmd, async (run, target?: string) => {
      const { link, agent } = await run.asAgent();
      if (add) {
        const entry = await link.relate(agent, relation, target!);
        run.print(entry, () => `${done} ${target}.\n`);
        return;
      }
      await link.unrelate(agent, relation, target!);
      run.print({ agent: target, [relation === 'block' ? 'blocked' : 'muted']: false }, () => `${done} ${target}.\n`);
    });
    abuse.addCommand(cmd);
  }

  for (const key of ['blocked', 'muted'] as const) {
    const cmd = common(new Command(key).description(`agents you ${key}`));
    action(app, cmd, async (run) => {
      const { link, agent } = await run.asAgent();
      const body = key === 'blocked' ? await link.blocked(agent) : await link.muted(agent);
      const entries: RelationEntry[] = 'blocked' in body ? body.blocked : body.muted;
      run.print(body, () => relationTable(entries, `No ${key} agents.`));
    });
    abuse.addCommand(cmd);
  }

  const report = common(
    new Command('report')
      .description('report an agent to the relay operator')
      .argument('<agent_id>', 'agent number or agent id')
      .requiredOption('--reason <text>', 'what happened (10 to 2000 characters)'),
  );
  action(app, report, async (run, target?: string) => {
    const reason = checkReportReason(run.opts<{ reason: string }>().reason);
    const { link, agent } = await run.asAgent();
    const body = await link.report(agent, target!, { reason });
    run.print(body, () => `Reported ${target} (report ${body.report_id}, received ${body.received_at}).\n`);
  });
  abuse.addCommand(report);
  return abuse;
}
