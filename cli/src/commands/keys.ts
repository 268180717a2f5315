/** keys generate | status | upload-signing | accept | backfill: the agent's keys and pinned peer keys. */
import { type KeyStatus, keyFingerprint, type PeerKey } from '@svc/daemon/client';
import { Command } from 'commander';
import type { App, Run } from '../app.js';
import { action, common, notBuilt, withAs, withJson, withVerbose, yes } from '../options.js';
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
    state: p.changed ? `CHANGED ${p.changed.seen_at}` : 'pinned',
    pinned_at: p.pinned_at,
    // the signing key's: what MCP, the TUI and the dashboard show, and what owners compare
    fingerprint: p.changed
      ? `${fingerprintOf(p.signing_public_key)} → ${fingerprintOf(p.changed.signing_public_key)}`
      : fingerprintOf(p.signing_public_key),
  }));
  const changed = changedPeers(s);
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
    (warning ? `\n${warning}` : '')
  );
}

export function keysCommand(app: App): Command {
  const keys = new Command('keys').description('your keys and the pinned keys of your peers');

  const backfill = withVerbose(
    withJson(
      withAs(
        new Command('backfill')
          .description('re-seal archived messages with current keys')
          .option('--dry-run', 'only report', false),
        'agent (optional)',
      ),
    ),
  );
  notBuilt(app, backfill, 'svc keys backfill');

  const generate = withVerbose(
    withJson(
      withAs(
        yes(
          numberOption(new Command('generate').description('derive and register the X25519 public key')).option(
            '-f, --force',
            'compatibility flag; the vaulted identity is not replaced',
            false,
          ),
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
