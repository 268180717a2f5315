/** keys generate | status | upload-signing | accept | backfill: the agent's keys and pinned peer keys. */
import {
  DaemonClientError,
  type KeyBackfill,
  type KeyStatus,
  keyFingerprint,
  ownKeyMismatch,
  type PeerKey,
} from '@svc/daemon/client';
import { Command } from 'commander';
import type { App, Run } from '../app.js';
import { action, common, withAs, withJson, withVerbose, yes } from '../options.js';
import { keyValues, table } from '../output.js';

const numberOption = (cmd: Command) => cmd.option('-n, --number <agent_number>', 'agent number (same as --as)');

/** --as wins; else --number; else SVC_AGENT or the only local agent. */
async function keysAgent(run: Run): Promise<{ agent: string; link: Awaited<ReturnType<Run['link']>> }> {
  const link = await run.link();
  const o = run.opts<{ number?: string }>();
  const agent = run.opts().as?.trim() || o.number?.trim() || (await run.agent(link));
  return { agent, link };
}

export function changedPeers(status: KeyStatus): PeerKey[] {
  return status.peers.filter((p) => p.changed !== undefined);
}

/** A key's fingerprint; a key the daemon holds is always well formed, but this is for people to read, so never throws. */
function fingerprintOf(publicKey: string): string {
  try {
    return keyFingerprint(publicKey);
  } catch {
    return '(not a key)';
  }
}

export function keyStatusText(s: KeyStatus): string {
  const peers = s.peers.map((p) => ({
    agent_number: p.agent_number,
    state: p.changed ? `CHANGED ${p.changed.seen_at}` : p.unsigned ? 'UNSIGNED' : 'pinned',
    pinned_at: p.pinned_at,
    // the signing key's: what MCP, the TUI and the dashboard show, and what owners compare
    fingerprint: p.changed
      ? `${fingerprintOf(p.signing_public_key)} → ${fingerprintOf(p.changed.signing_public_key)}`
      : fingerprintOf(p.signing_public_key),
  }));
  const changed = changedPeers(s);
  const unsigned = s.peers
    .filter((p) => p.unsigned && !p.changed)
    .map(
      (p) =>
        `NOTE: ${p.agent_number}'s key record is unsigned (enrolled before key records were signed): its messages are verified, but nothing is sent to it until it publishes a signed one (its owner runs svc keys backfill).\n`,
    )
    .join('');
  const warning = changed
    .map(
      (p) =>
        `WARNING: ${p.agent_number} now presents a different key than the one pinned on ${p.pinned_at} ` +
        `(seen ${p.changed!.seen_at}; fingerprint ${fingerprintOf(p.changed!.signing_public_key)}). Confirm it with them out of band, then run: svc keys accept ${p.agent_number} --as ${s.agent}\n`,
    )
    .join('');
  return (
    keyValues([
      ['agent', s.agent],
      ['signing key', s.signing_public_key],
      ['fingerprint', fingerprintOf(s.signing_public_key)],
      ['encryption key', s.encryption_public_key],
      ['rotation', String(s.rotation)],
      [
        'relay version',
        s.relay_version !== null
          ? String(s.relay_version)
          : s.relay_error
            ? `unknown: the relay could not be asked (${s.relay_error})`
            : 'not uploaded',
      ],
    ]) +
    '\nPinned peer keys:\n' +
    table(
      [
        ['peer', 'agent_number'],
        ['state', 'state'],
        ['pinned', 'pinned_at'],
        ['fingerprint', 'fingerprint'],
      ],
      peers,
      'No pinned peer keys.',
    ) +
    (warning || unsigned ? `\n${warning}${unsigned}` : '')
  );
}

/** One agent of `svc keys backfill`: the daemon's answer, or why there is none. */
type BackfillRow = Omit<KeyBackfill, 'state' | 'agent_number' | 'relay_version'> & {
  agent_number: string | null;
  /** the daemon's judgement; local: no relay; uplink: a machine's uplink identity; unknown: it could not be asked (see error) */
  state: KeyBackfill['state'] | 'local' | 'uplink' | 'unknown';
  relay_version: number | null;
  error?: { code: string; message: string };
};

/** What is wrong with an agent's published key record, as `svc keys backfill` and `svc doctor` both say it. */
export function relayRecordWhy(state: 'unsigned' | 'stale', version: number | null, mended = false): string {
  const [publishes, send] = mended ? ['published', 'sent'] : ['publishes', 'send'];
  return state === 'unsigned'
    ? `its relay ${publishes} version ${version} of its keys unsigned (enrolled before key records were signed), so peers ${send} nothing to it`
    : `its relay ${publishes} version ${version} with another encryption key than this machine's`;
}

function backfillText(rows: BackfillRow[], dryRun: boolean): string {
  const what = (r: BackfillRow): string => {
    if (r.error) return `${r.error.code}: ${r.error.message}`;
    switch (r.state) {
      case 'local':
        return 'a local agent: no relay publishes its keys';
      case 'uplink':
        return "this machine's uplink identity: it sends no messages, no peer reads its keys";
      case 'signed':
        return `nothing to do: the relay publishes its keys signed (version ${r.relay_version})`;
      case 'unsigned':
      case 'stale': {
        const why = relayRecordWhy(r.state, r.relay_version, r.uploaded_version !== null);
        return r.uploaded_version !== null
          ? `published signed version ${r.uploaded_version}: ${why}`
          : `would publish a signed version ${(r.relay_version ?? 0) + 1}: ${why}`;
      }
      default:
        return r.state;
    }
  };
  const lines = rows.map((r) => ({ agent: r.agent, agent_number: r.agent_number ?? '-', what: what(r) }));
  const pending = rows.some((r) => (r.state === 'unsigned' || r.state === 'stale') && r.uploaded_version === null);
  return (
    table(
      [
        ['agent', 'agent'],
        ['number', 'agent_number'],
        ['relay key record', 'what'],
      ],
      lines,
      'No local agents.',
    ) + (dryRun && pending ? 'Run svc keys backfill without --dry-run to publish them.\n' : '')
  );
}

export function keysCommand(app: App): Command {
  const keys = new Command('keys').description('your keys and the pinned keys of your peers');

  const backfill = withVerbose(
    withJson(
      withAs(
        new Command('backfill')
          .description('have the relay publish your keys, signed, where its record is unsigned or older')
          .option('--dry-run', 'only report', false),
        'look at this agent only (default: every local agent)',
      ),
    ),
  );
  action(app, backfill, async (run) => {
    const dryRun = run.opts<{ dryRun: boolean }>().dryRun;
    const link = await run.link();
    const rows: BackfillRow[] = [];
    for (const a of run.chosenAgents((await link.status()).agents)) {
      const row: BackfillRow = {
        agent: a.name,
        agent_number: a.agent_number ?? null,
        state: 'unknown',
        relay_version: null,
        uploaded_version: null,
      };
      // neither has a key record any peer reads: a local agent has no relay, and a machine's
      // uplink identity sends no messages (nor may it use the key routes)
      if (a.kind === 'local' || a.kind === 'uplink') row.state = a.kind;
      else if (a.unusable) row.error = { code: a.unusable.error, message: a.unusable.message };
      else {
        try {
          Object.assign(row, await link.backfillKeys(a.name, { dryRun }));
          const mismatch = ownKeyMismatch(row as KeyBackfill);
          if (mismatch) row.error = { code: 'own_key_mismatch', message: mismatch };
        } catch (err) {
          if (!(err instanceof DaemonClientError)) throw err;
          row.error = { code: err.code, message: err.message };
        }
      }
      rows.push(row);
    }
    if (rows.some((r) => r.error)) app.exitCode = 1;
    run.print(rows, () => backfillText(rows, dryRun));
  });

  const generate = withVerbose(
    withJson(
      withAs(
        yes(
          numberOption(
            new Command('generate').description(
              'rotate the encryption key: generate a new X25519 key and register it with the relay',
            ),
          ).option('-f, --force', 'compatibility flag; the vaulted identity is not replaced', false),
          'compatibility flag',
        ),
      ),
    ),
  );
  action(app, generate, async (run) => {
    const { agent, link } = await keysAgent(run);
    const s = await link.generateKeys(agent);
    run.print(
      s,
      () => `Generated and uploaded a new encryption key for ${s.agent} (rotation ${s.rotation}).\n${keyStatusText(s)}`,
    );
  });

  const status = withVerbose(
    withJson(
      withAs(numberOption(new Command('status').description('your keys and pinned peer keys; shows key changes'))),
    ),
  );
  action(app, status, async (run) => {
    const { agent, link } = await keysAgent(run);
    const s = await link.keys(agent);
    run.print(s, () => keyStatusText(s));
  });

  const uploadSigning = common(new Command('upload-signing').description('upload the Ed25519 signing public key'));
  action(app, uploadSigning, async (run) => {
    const link = await run.link();
    const s = await link.uploadSigningKey(await run.agent(link));
    run.print(s, () => `Uploaded the signing key of ${s.agent} (relay version ${s.relay_version ?? '-'}).\n`);
  });

  const accept = common(
    new Command('accept')
      .description("accept a peer's changed key after checking it out of band")
      .argument('<agent_number>', 'the peer'),
  );
  action(app, accept, async (run, peer?: string) => {
    const link = await run.link();
    const p = await link.acceptPeerKey(await run.agent(link), peer!);
    run.print(p, () => `Pinned the current key of ${p.agent_number}.\n`);
  });

  return keys.addCommand(accept).addCommand(backfill).addCommand(generate).addCommand(status).addCommand(uploadSigning);
}
