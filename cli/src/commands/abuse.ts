/** abuse block | unblock | mute | unmute | blocked | muted | report (relay: /api/v1/agents/{id}/block|mute|report). */
import { type BlockedList, type MutedList, PROFILE_LIMITS, type RelationEntry, type ReportAccepted } from '@svc/shared';
import { Command } from 'commander';
import type { App } from '../app.js';
import { usageError } from '../errors.js';
import { action, common } from '../options.js';
import { table } from '../output.js';
import { relay, seg } from '../relay-call.js';

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
    ['block', 'POST', 'block', 'Blocked', 'block an agent: the relay refuses its messages to you'],
    ['unblock', 'DELETE', 'block', 'Unblocked', 'lift a block'],
    ['mute', 'POST', 'mute', 'Muted', 'mute an agent: its messages arrive without notification'],
    ['unmute', 'DELETE', 'mute', 'Unmuted', 'lift a mute'],
  ] as const;
  for (const [name, method, relation, done, description] of verbs) {
    const cmd = common(new Command(name).description(description).argument('<agent_id>', 'agent number or agent id'));
    action(app, cmd, async (run, target?: string) => {
      const answer = await relay<RelationEntry | null>(run, method, `/api/v1/agents/${seg(target!)}/${relation}`);
      const value = answer.body ?? { agent: target, [relation === 'block' ? 'blocked' : 'muted']: method === 'POST' };
      run.print(value, () => `${done} ${target}.\n`);
    });
    abuse.addCommand(cmd);
  }

  for (const [name, key] of [
    ['blocked', 'blocked'],
    ['muted', 'muted'],
  ] as const) {
    const cmd = common(new Command(name).description(`agents you ${key}`));
    action(app, cmd, async (run) => {
      const { body } = await relay<BlockedList & MutedList>(run, 'GET', `/api/v1/agents/me/${name}`);
      const entries = body[key] ?? [];
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
    const { body } = await relay<ReportAccepted>(run, 'POST', `/api/v1/agents/${seg(target!)}/report`, { reason });
    run.print(body, () => `Reported ${target} (report ${body.report_id}, received ${body.received_at}).\n`);
  });
  abuse.addCommand(report);
  return abuse;
}
