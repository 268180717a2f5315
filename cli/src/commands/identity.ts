/** Identity: whoami, deregister, sync, doctor, account (hosted), star, tui; start and stop live in daemon-process.ts. */
import {
  type ArchiveIntegrity,
  type DaemonApi,
  type DaemonStatus,
  type LocalAgent,
  ownKeyMismatch,
  refusedAdvice,
  type SyncResult,
} from '@svc/daemon/client';
import type { OwnProfile, TokenResponse } from '@svc/shared';
import { Command } from 'commander';
import type { App } from '../app.js';
import { DEFAULT_PROFILE, getSetting } from '../config-file.js';
import { CliError, usageError } from '../errors.js';
import { action, hostedOnly, notBuilt, withAs, withJson, withVerbose, yes } from '../options.js';
import { keyValues, table, warn } from '../output.js';
import { agentText, outOfServiceText } from '../render.js';
import { startCommand, stopCommand } from './daemon-process.js';
import { relayRecordWhy } from './keys.js';
import { tuiCommand } from './tui.js';

/** whoami straight against a relay with an API key: token exchange, then GET /api/v1/agents/me. */
async function whoamiByApiKey(apiUrl: string, apiKey: string): Promise<OwnProfile> {
  const base = apiUrl.replace(/\/+$/, '');
  const call = async <T>(path: string, init: RequestInit): Promise<T> => {
    let res: Response;
    try {
      res = await fetch(`${base}${path}`, init);
    } catch (err) {
      throw new CliError('relay_unreachable', `Cannot reach ${base}: ${(err as Error).message}`, { cause: err });
    }
    const body = (await res.json().catch(() => ({}))) as { error?: string; message?: string };
    if (!res.ok) {
      throw new CliError(body.error ?? 'internal_error', body.message ?? `The relay answered ${res.status}.`);
    }
    return body as T;
  };
  const token = await call<TokenResponse>('/api/v1/auth/token', {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}` },
  });
  return call<OwnProfile>('/api/v1/agents/me', { headers: { authorization: `Bearer ${token.access_token}` } });
}

/**
 * The agent `svc deregister` removes, as status describes it (its kind: an agent of this
 * machine alone has no relay to revoke it on), out of service or not: status knows every
 * agent, also one whose agent.json cannot be read (by name alone). As the daemon resolves
 * it: a name wins over a number, and among numbers an agent in service over one out of it.
 */
async function agentToRemove(link: DaemonApi, ref: string): Promise<DaemonStatus['agents'][number]> {
  const agents = (await link.status()).agents;
  const byNumber = agents.filter((a) => a.agent_number === ref);
  const agent = agents.find((a) => a.name === ref) ?? byNumber.find((a) => !a.unusable) ?? byNumber[0];
  if (!agent) throw new CliError('unknown_agent', `No local agent ${ref}; see \`svc agent list\`.`);
  return agent;
}

function accountCommand(app: App): Command {
  const what = 'Accounts';
  const account = withJson(
    new Command('account').description('manage hosted-service accounts on this machine (hosted only)'),
  );
  hostedOnly(app, account, what);
  const sub = (name: string, description: string) => {
    const c = new Command(name).description(description);
    account.addCommand(c);
    return c;
  };
  hostedOnly(
    app,
    sub('add', 'sign in to another account').option('--no-sign-out', 'keep the current account signed in'),
    what,
  );
  hostedOnly(app, sub('billing', 'open the billing link'), what);
  hostedOnly(app, yes(sub('cancel', 'cancel the plan at the end of the period')), what);
  hostedOnly(app, withJson(sub('list', 'accounts on this machine')), what);
  hostedOnly(app, withJson(sub('plan', "an account's plan").argument('[query]', 'part of the account email')), what);
  hostedOnly(
    app,
    yes(sub('remove', 'remove an account from this machine').argument('[query]', 'part of the account email')),
    what,
  );
  hostedOnly(app, sub('switch', 'switch the active account').argument('[query]', 'part of the account email'), what);
  hostedOnly(app, yes(sub('upgrade', 'change the plan').argument('<tier>', 'plan tier')), what);
  return account;
}

/**
 * What each connected agent's relay publishes as its keys, where that is not a record of the
 * vault's keys signed by them (svc keys backfill --dry-run's judgement): peers cannot send to
 * an agent whose record is unsigned. An agent whose relay cannot be asked is left to its
 * session's line.
 */
async function keyRecordProblems(link: DaemonApi, agents: DaemonStatus['agents']): Promise<string[]> {
  const connected = agents.filter((a) => (a.kind ?? 'agent') === 'agent' && a.session === 'connected');
  const judged = await Promise.all(
    connected.map((a) => link.backfillKeys(a.name, { dryRun: true }).catch(() => undefined)),
  );
  return judged.flatMap((b) => {
    if (!b) return [];
    if (b.state === 'unsigned' || b.state === 'stale') {
      return [`agent ${b.agent}: ${relayRecordWhy(b.state, b.relay_version)}; run svc keys backfill --as ${b.agent}`];
    }
    const mismatch = ownKeyMismatch(b);
    return mismatch ? [`agent ${b.agent}: ${mismatch}`] : [];
  });
}

export function identityCommands(app: App): Command[] {
  const whoami = withVerbose(
    withJson(
      withAs(
        new Command('whoami')
          .description('the identity the CLI acts as')
          .option('--api-url <url>', 'relay base URL (with --api-key: ask the relay directly; default: config api-url)')
          .option('--api-key <key>', 'agent API key (with --api-url; default: config api-key)'),
        'agent name or number (unless --api-url and --api-key, or SVC_AGENT)',
      ),
    ),
  );
  action(app, whoami, async (run) => {
    const o = run.opts<{ apiUrl?: string; apiKey?: string }>();
    // either flag asks the relay directly; the other half may come from `svc config set`
    // (a key kept there stays off the command line, which every local user can read)
    const direct = o.apiUrl !== undefined || o.apiKey !== undefined;
    const apiUrl = o.apiUrl ?? (direct ? await getSetting(app.home, DEFAULT_PROFILE, 'api-url') : undefined);
    const apiKey = o.apiKey ?? (direct ? await getSetting(app.home, DEFAULT_PROFILE, 'api-key') : undefined);
    if (direct && (apiUrl === undefined || apiKey === undefined)) {
      const missing = apiUrl === undefined ? 'api-url' : 'api-key';
      throw usageError(
        `--api-url and --api-key go together; give --${missing}, or keep it with svc config set ${missing} VALUE.`,
      );
    }
    if (apiUrl !== undefined && apiKey !== undefined) {
      if (!URL.canParse(apiUrl) || !/^https?:$/.test(new URL(apiUrl).protocol)) {
        throw usageError(`--api-url must be the relay's http(s) base URL; got ${JSON.stringify(apiUrl)}.`);
      }
      const profile = await whoamiByApiKey(apiUrl, apiKey);
      run.print(profile, () =>
        keyValues([
          ['agent number', profile.agent_number],
          ['agent id', profile.agent_id],
          ['tenant', profile.tenant_id],
          ['deployment', profile.deployment_id],
          ['display name', profile.display_name],
          ['capabilities', profile.capabilities],
        ]),
      );
      return;
    }
    const link = await run.link();
    const agent = await link.getAgent(await run.agent(link));
    run.print(agent, () => agentText(agent));
  });

  const deregister = withVerbose(
    withJson(
      withAs(
        yes(
          new Command('deregister')
            .description('revoke a local agent on its relay (nobody can write to it any more), then forget it here')
            .option(
              '--local',
              'only forget it here, without revoking it (a relay that is gone for good, or an agent whose agent.json cannot be read)',
              false,
            ),
        ).argument('<agent_name>', 'the local agent to remove'),
        'agent to act as (defaults to the agent being removed)',
      ),
    ),
  );
  action(app, deregister, async (run, name?: string) => {
    const o = run.opts<{ yes: boolean; local: boolean }>();
    const link = await run.link();
    const agent = await agentToRemove(link, name!);
    // an agent whose agent.json cannot be read has no number to show, and only --local can remove it
    const who = agent.agent_number ? `${agent.name} (${agent.agent_number})` : agent.name;
    const refused = !o.local && agent.unusable?.error === 'config_invalid';
    // an agent of this machine alone has no relay to revoke it on
    const alone = agent.kind === 'local';
    if (!o.yes && !refused) {
      await run.confirm(
        alone
          ? `Remove ${who} and its identity from this machine?`
          : o.local
            ? `Remove ${who} and its identity from this machine, without revoking it?`
            : `Revoke ${who} on its relay and remove it from this machine?`,
      );
    }
    await link.deregister(agent.name, { revoke: !o.local });
    const revoked = !o.local && !alone;
    run.print({ name: agent.name, agent_number: agent.agent_number ?? null, removed: true, revoked }, () =>
      alone
        ? `Removed ${who} from this machine (an agent of this machine alone: no relay to revoke it on).\n`
        : revoked
          ? `Revoked ${who} on its relay and removed it from this machine.\n`
          : agent.kind === undefined
            ? // its agent.json cannot be read: whether it was enrolled on a relay is not known
              `Removed ${who} from this machine; it was not revoked (if it was enrolled on a relay, ask that relay's operator: svc-relay agent revoke).\n`
            : `Removed ${who} from this machine; it was not revoked (ask the operator: svc-relay agent revoke).\n`,
    );
  });

  const sync = withVerbose(
    withJson(
      withAs(
        new Command('sync').description(
          'fetch pending messages and delivery receipts from the relay into the local archive',
        ),
        'agent to sync (without it and SVC_AGENT: every local agent)',
      ),
    ),
  );
  action(app, sync, async (run) => {
    const link = await run.link();
    const chosen = run.explicitAgent();
    // every agent: those out of service are left out (and said), the others synced all the same
    const outOfService = chosen ? [] : (await link.status()).agents.filter((a) => a.unusable);
    const agents = chosen
      ? [chosen]
      : (await link.listAgents())
          .map((a: LocalAgent) => a.name)
          .filter((name) => !outOfService.some((a) => a.name === name));
    const results: SyncResult[] = [];
    for (const agent of agents) {
      run.info(`syncing ${agent}`);
      results.push(await link.sync(agent));
    }
    for (const a of outOfService) {
      warn(
        run.app.io.stderr,
        `agent ${a.name} is out of service (${a.unusable?.error}), not synced: ${a.unusable?.message}`,
      );
      run.app.exitCode = 1;
    }
    // --json says which were left out and why, as the warnings do
    const skipped = outOfService.map((a) => ({
      agent: a.name,
      error: a.unusable?.error,
      message: a.unusable?.message,
    }));
    run.print([...results, ...skipped], () =>
      table(
        [
          ['agent', 'agent'],
          ['fetched', 'fetched'],
          ['archived', 'archived'],
          ['rejected', 'rejected'],
          ['receipts', 'receipts'],
        ],
        results,
        'No local agents to sync.',
      ),
    );
  });

  /** An archive's check in a word or three: `alice: ok (quick check, from the receipt of 2025-…)`. */
  const integrityText = (r: ArchiveIntegrity) =>
    `${r.agent}: ${r.ok ? 'ok' : 'DAMAGED'} (${r.kind} check${r.from_receipt ? `, receipt of ${r.checked_at}` : ', now'})`;

  const doctor = withVerbose(
    withJson(
      withAs(
        new Command('doctor')
          .description('check the daemon, the vault, the deployments, the agents and their archives')
          .option(
            '--api-url <url>',
            'also check the relay at this URL: it answers, is ready, and is a deployment trusted here (default: config api-url)',
          )
          .option(
            '--full-integrity',
            "check every page and index of each archive now, instead of a quick check's receipt of the last six hours",
            false,
          ),
        'agent to check',
      ),
    ),
  );
  action(app, doctor, async (run) => {
    const o = run.opts<{ apiUrl?: string; fullIntegrity: boolean }>();
    const link = await run.link();
    const status = await link.status();
    const audit = await link.auditDeployments();
    const agents = run.chosenAgents(status.agents);
    // the archives of the agents in service (one out of service is reported below, with its code)
    const inService = agents.filter((a) => a.session !== 'unusable').map((a) => a.name);
    // --as an agent in service: its archive alone is checked (a check reads every page)
    const only = run.explicitAgent() && inService.length === 1 ? { agent: inService[0] as string } : {};
    const archives = (await link.archiveIntegrity({ full: o.fullIntegrity, ...only })).filter((r) =>
      inService.includes(r.agent),
    );
    const relayUrl = o.apiUrl ?? (await getSetting(app.home, DEFAULT_PROFILE, 'api-url'));
    const relay = relayUrl === undefined ? undefined : await link.checkRelay(relayUrl);
    const keyRecords = await keyRecordProblems(link, agents);
    const problems = [
      ...(status.vault.warning ? [`vault: ${status.vault.warning}`] : []),
      ...(relay?.checks ?? [])
        .filter((c) => c.status === 'fail' || c.status === 'warn')
        .map((c) => `relay ${relay?.url} (${c.check}): ${c.detail}`),
      ...archives
        .filter((r) => !r.ok)
        .map(
          (r) =>
            `agent ${r.agent}: its archive ${r.file} failed SQLite's ${r.kind} integrity check: ${r.problems.join('; ')}. Stop the daemon (svc stop), then restore the file from a backup, or move it away (a new, empty archive is made in its place; what it held is lost)`,
        ),
      ...audit.flatMap((d) => d.problems.map((p) => `deployment ${d.name}: ${p}`)),
      // out of service, whatever its kind: the code, the file and what to do
      ...agents.map(outOfServiceText).filter((p) => p !== undefined),
      // an uplink identity or a --local agent has no relay session, by design
      ...agents
        .filter((a) => (a.kind ?? 'agent') === 'agent' && a.session !== 'connected' && a.session !== 'unusable')
        .map((a) =>
          a.session === 'refused'
            ? refusedAdvice(a.name)
            : `agent ${a.name}: session ${a.session}${a.session_error ? `: ${a.session_error}` : ''}`,
        ),
      ...keyRecords,
      // a deployment removed under its agents (by a build that allowed it): they lost its document
      // (an agent whose agent.json cannot be read names no deployment: its problem is above)
      ...agents
        .filter((a) => a.kind !== 'local' && a.deployment !== undefined && !audit.some((d) => d.name === a.deployment))
        .map(
          (a) =>
            `agent ${a.name}: its deployment ${a.deployment} is no longer trusted here; fetch it again with svc deployment fetch --url URL --trust FILE --name ${a.deployment}`,
        ),
    ];
    const report = {
      ok: problems.length === 0,
      daemon: { version: status.version, pid: status.pid, home: status.home },
      vault: status.vault,
      deployments: audit,
      agents,
      archives,
      ...(relay ? { relay } : {}),
      problems,
    };
    run.print(
      report,
      () =>
        keyValues([
          ['daemon', `running, pid ${status.pid}, version ${status.version}`],
          ['home', status.home],
          ['vault', status.vault.kind],
          ['deployments', String(audit.length)],
          [
            'agents',
            agents.map((a) =>
              a.session === 'unusable'
                ? `${a.name} (unusable)`
                : a.kind === 'uplink' || a.kind === 'local'
                  ? `${a.name} (${a.kind})`
                  : `${a.name} (${a.session}${a.receive === 'source' ? `, via named source ${a.source}` : ''})`,
            ),
          ],
          ['archives', archives.map(integrityText)],
          ...(relay
            ? [
                [
                  'relay',
                  `${relay.url}: ${relay.checks
                    .filter((c) => c.status !== 'skipped')
                    .map((c) => `${c.check} ${c.status}`)
                    .join(', ')}`,
                ] as [string, string],
              ]
            : []),
        ]) + (problems.length ? `Problems:\n${problems.map((p) => `  - ${p}\n`).join('')}` : 'No problems found.\n'),
    );
    if (problems.length) app.exitCode = 1;
  });

  const star = new Command('star')
    .description('star the project repository')
    .option('--repo <owner/name>', 'repository');
  notBuilt(app, star, 'svc star');

  const start = startCommand(app);
  const stop = stopCommand(app);

  const tui = tuiCommand(app);

  return [accountCommand(app), deregister, doctor, star, start, stop, sync, tui, whoami];
}
