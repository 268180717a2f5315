/** msg check | ack | search: the inbound queue and the local archive search. */
import { Command } from 'commander';
import type { App } from '../app.js';
import { usageError } from '../errors.js';
import { action, common, intParser, isOptionWord } from '../options.js';
import { jsonLine } from '../output.js';
import { messagesTable } from '../render.js';

export const WAIT_MIN = 1;
export const WAIT_MAX = 30;

/** --wait: whole seconds from 1 to 30, checked before anything is sent. */
export function parseWait(raw: string): number {
  if (isOptionWord(raw)) {
    throw usageError(
      `--wait needs its number of seconds (${WAIT_MIN} to ${WAIT_MAX}) before the next option; got the option ${raw}.`,
    );
  }
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || n < WAIT_MIN || n > WAIT_MAX) {
    throw usageError(
      `--wait must be a whole number of seconds from ${WAIT_MIN} to ${WAIT_MAX}; got ${JSON.stringify(raw)}.`,
    );
  }
  return n;
}

export function msgCommand(app: App): Command {
  const msg = new Command('msg').description('check, acknowledge and search messages');

  const check = common(
    new Command('check')
      .description('new inbound messages since the last check that are still unacknowledged (muted senders left out)')
      .option('--wait <seconds>', `long-poll up to this many seconds (${WAIT_MIN} to ${WAIT_MAX})`)
      .option('--stream', 'keep checking and print each message as one JSON line (JSONL); requires --wait', false)
      .option('--ack', 'acknowledge the messages returned', false),
  );
  action(app, check, async (run) => {
    const o = run.opts<{ wait?: string; stream: boolean; ack: boolean }>();
    const wait = o.wait === undefined ? undefined : parseWait(o.wait);
    if (o.stream && wait === undefined) throw usageError('--stream requires --wait SECONDS.');
    const { link, agent } = await run.asAgent();
    if (!o.stream) {
      const messages = await link.check(agent, { wait, ack: o.ack });
      run.print(messages, () => messagesTable(messages, 'No new messages.'));
      return;
    }
    const signal = run.stopSignal();
    run.info(`streaming new messages for ${agent}; interrupt to stop`);
    while (!signal.aborted) {
      let messages: Awaited<ReturnType<typeof link.check>>;
      try {
        // the signal cancels the long-poll itself, so Ctrl-C does not wait for it to time out
        messages = await link.check(agent, { wait, ack: o.ack, signal });
      } catch (err) {
        if (signal.aborted) break;
        throw err;
      }
      for (const m of messages) run.out(jsonLine(m));
    }
  });

  const ack = common(
    new Command('ack').description('acknowledge a message').argument('<message_id>', 'the message to acknowledge'),
  );
  action(app, ack, async (run, id?: string) => {
    const { link, agent } = await run.asAgent();
    const done = await link.ack(agent, id!);
    run.print(done, () => `Acknowledged ${done.message_id} at ${done.acked_at}.\n`);
  });

  const search = common(
    new Command('search')
      .description('search the local message archive')
      .argument('<query>', 'search terms')
      .option('--limit <n>', 'at most this many results', intParser(1, 1000, '--limit'), 20),
  );
  action(app, search, async (run, query?: string) => {
    const o = run.opts<{ limit: number }>();
    if (query!.trim() === '') throw usageError('msg search needs search terms: svc msg search QUERY.');
    const { link, agent } = await run.asAgent();
    const messages = await link.search(agent, query!, { limit: o.limit });
    run.print(messages, () => messagesTable(messages, 'No matches.'));
  });

  return msg.addCommand(ack).addCommand(check).addCommand(search);
}
