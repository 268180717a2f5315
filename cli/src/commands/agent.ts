/** agent info | list | update | status | visibility | heartbeat | prune | recover | webhook (the daemon's profile operations). */
import type { OwnProfile, ProfileUpdate, PublicProfile } from '@svc/shared';
import { VISIBILITIES } from '@svc/shared';
import { Argument, Command } from 'commander';
import type { App, Run } from '../app.js';
import { usageError } from '../errors.js';
import { action, common, hostedOnly, withAs, withJson, withVerbose } from '../options.js';
import { keyValues, table } from '../output.js';
import { warnIfVaultLocked } from '../render.js';

function profileText(p: PublicProfile | OwnProfile): string {
  const own = 'endpoint_url' in p ? p : undefined;
  return keyValues([
    ['agent number', p.agent_number],
    ['agent id', p.agent_id],
    ['display name', p.display_name],
    ['description', p.description],
    ['presence', p.presence],
    ['status', p.status],
    ['status text', p.status_text],
    ['last seen', p.last_seen_at],
    ['location', p.location],
    ['timezone', p.timezone],
    ['visibility', p.visibility],
    ['discoverable', p.discoverable ? 'yes' : 'no'],
    ...(own
      ? ([
          ['tenant', own.tenant_id],
          ['deployment', own.deployment_id],
          ['capabilities', own.capabilities],
          ['webhook url', own.endpoint_url],
          ['webhook secret', own.webhook_secret_set ? 'set' : 'not set'],
          ['enrolled', own.enrolled_at],
        ] as Array<[string, string | string[] | null]>)
      : []),
  ]);
}

async function patchMe(run: Run, update: ProfileUpdate): Promise<OwnProfile> {
  const { link, agent } = await run.asAgent();
  return link.updateProfile(agent, update);
}

function webhookText(p: OwnProfile): string {
  const lines = keyValues([
    ['webhook url', p.endpoint_url ?? 'none'],
    ['secret', p.webhook_secret_set ? 'set' : 'not set'],
  ]);
  if (!p.webhook_secret) return lines;
  return `${lines}\nWebhook secret (shown once; store it now to verify deliveries):\n${p.webhook_secret}\n`;
}

function webhookCommand(app: App): Command {
  const webhook = new Command('webhook').description('deliver inbound messages to your HTTPS endpoint');
  const set = common(
    new Command('set')
      .description('set the webhook URL (the first URL generates the secret, shown once)')
      .argument('<url>', 'absolute https URL'),
  );
  action(app, set, async (run, url?: string) => {
    // the relay takes a blank URL for "clear", which erases the secret too: an unset shell
    // variable must not do that
    if (url!.trim() === '') {
      throw usageError(
        'The webhook URL is empty: give an https URL, or remove the webhook with svc agent webhook clear.',
      );
    }
    const p = await patchMe(run, { endpoint_url: url! });
    run.print(p, () => webhookText(p));
  });
  const clear = common(new Command('clear').description('remove the webhook URL and its secret'));
  action(app, clear, async (run) => {
    const p = await patchMe(run, { endpoint_url: null });
    run.print(p, () => 'Webhook removed; the next URL gets a new secret.\n');
  });
  const status = common(new Command('status').description('the webhook URL and whether a secret is set'));
  action(app, status, async (run) => {
    const { link, agent } = await run.asAgent();
    const p = await link.profile(agent);
    const view = {
      agent_number: p.agent_number,
      endpoint_url: p.endpoint_url,
      webhook_secret_set: p.webhook_secret_set,
    };
    run.print(view, () => webhookText(p));
  });
  return webhook.addCommand(set).addCommand(clear).addCommand(status);
}

export function agentCommand(app: App): Command {
  const agent = new Command('agent').description('agent profiles, presence and local agents');

  const heartbeat = common(new Command('heartbeat').description('tell the relay this agent is present'));
  action(app, heartbeat, async (run) => {
    const { link, agent } = await run.asAgent();
    const body = await link.heartbeat(agent, {});
    run.print(body, () =>
      keyValues([
        ['presence', body.presence],
        ['status', body.status],
        ['last seen', body.last_seen_at],
      ]),
    );
  });

  const info = common(
    new Command('info')
      .description('an agent profile')
      .argument('[agent_id]', 'agent number or id (default: yourself)'),
  );
  action(app, info, async (run, target?: string) => {
    const { link, agent } = await run.asAgent();
    const body: PublicProfile | OwnProfile =
      target === undefined ? await link.profile(agent) : await link.peerProfile(agent, target);
    run.print(body, () => profileText(body));
  });

  const list = withVerbose(
    withJson(
      new Command('list')
        .description('agents registered on this machine')
        .option('--all', 'add an Account column', false),
    ),
  );
  action(app, list, async (run) => {
    const o = run.opts<{ all: boolean }>();
    const link = await run.link();
    const [agents, status] = await Promise.all([link.listAgents(), link.status()]);
    const session = new Map(status.agents.map((a) => [a.name, a.session]));
    const rows = [
      ...agents.map((a) => ({
        ...a,
        session: session.get(a.name) ?? 'offline',
        ...(o.all ? { account: null } : {}),
      })),
      // out of service with an agent.json that cannot be read: the daemon knows only its name
      ...status.agents
        .filter((a) => a.unusable && !agents.some((l) => l.name === a.name))
        .map((a) => ({ name: a.name, session: a.session, unusable: a.unusable, ...(o.all ? { account: null } : {}) })),
    ].sort((a, b) => a.name.localeCompare(b.name));
    run.print(rows, () =>
      table(
        [
          ['name', 'name'],
          ['agent number', 'agent_number'],
          ['deployment', 'deployment'],
          ['session', 'session'],
          ...(o.all ? ([['account', 'account']] as Array<[string, string]>) : []),
        ],
        rows,
        'No local agents; register one with svc register --enrollment-grant CODE.',
      ),
    );
    warnIfVaultLocked(run.app.io.stderr, status);
  });

  const prune = withVerbose(
    withJson(
      withAs(
        new Command('prune')
          .description(
            "remove the local agents whose relay refuses their identity (revoked there); each one's directory is set aside, not deleted",
          )
          .option('--dry-run', 'only list them', false),
        'look at this agent only (default: every local agent)',
      ),
    ),
  );
  action(app, prune, async (run) => {
    const o = run.opts<{ dryRun: boolean }>();
    const link = await run.link();
    // refused: the relay answered the agent's own signed sign-in with invalid_sign_in. Nothing
    // else is pruned: an agent offline, out of service or of this machine alone still exists.
    const refused = run.chosenAgents((await link.status()).agents).filter((a) => a.session === 'refused');
    const rows: Array<{ name: string; agent_number: string | null; deployment: string | null; removed: boolean }> = [];
    for (const a of refused) {
      // only here: its relay refuses it already, there is nothing there to revoke
      if (!o.dryRun) await link.deregister(a.name, { revoke: false });
      rows.push({
        name: a.name,
        agent_number: a.agent_number ?? null,
        deployment: a.deployment ?? null,
        removed: !o.dryRun,
      });
    }
    run.print(rows, () => {
      if (rows.length === 0) return 'Nothing to prune: no local agent is refused by its relay.\n';
      const lines = rows.map(
        (r) =>
          `${o.dryRun ? 'Would remove' : 'Removed'} ${r.name} (${r.agent_number}): the relay of deployment ${r.deployment} refuses its identity.`,
      );
      const after = o.dryRun
        ? 'Run svc agent prune without --dry-run to remove them.'
        : `Each directory is set aside in ${app.home}/agents as .deregistered-NAME-TIME.`;
      return `${lines.join('\n')}\n${after}\n`;
    });
  });

  const recover = withVerbose(
    withJson(
      new Command('recover')
        .description('recover an agent with an owner-rotated API key (hosted only)')
        .requiredOption('--name <name>', 'local agent name')
        .requiredOption('--number <agent_number>', 'agent number')
        .requiredOption('--api-key <key>', 'owner-rotated API key')
        .option('--api-url <url>', 'relay base URL'),
    ),
  );
  hostedOnly(app, recover, 'Recovery with an owner-rotated key');

  const status = common(
    new Command('status').description('set your free-form presence status').argument('<presence>', 'presence status'),
  );
  action(app, status, async (run, presence?: string) => {
    const { link, agent } = await run.asAgent();
    const body = await link.heartbeat(agent, { status: presence! });
    run.print(body, () => `Presence status set to ${JSON.stringify(body.status ?? presence)}.\n`);
  });

  const update = common(
    new Command('update')
      .description('update your profile (at least one option)')
      .option('--name <name>', 'display name')
      .option('--description <text>', 'description')
      .option('--status <status>', 'presence status')
      .option('--location <text>', 'location')
      .option('--timezone <iana>', 'IANA time zone, such as Europe/Paris'),
  );
  action(app, update, async (run) => {
    const o = run.opts<{
      name?: string;
      description?: string;
      status?: string;
      location?: string;
      timezone?: string;
    }>();
    const changes: ProfileUpdate = {};
    if (o.name !== undefined) changes.display_name = o.name;
    if (o.description !== undefined) changes.description = o.description;
    if (o.status !== undefined) changes.status = o.status;
    if (o.location !== undefined) changes.location = o.location;
    if (o.timezone !== undefined) changes.timezone = o.timezone;
    if (Object.keys(changes).length === 0) {
      throw usageError('Give at least one of --name, --description, --status, --location, --timezone.');
    }
    const p = await patchMe(run, changes);
    run.print(p, () => `Profile updated.\n${profileText(p)}`);
  });

  const visibility = common(
    new Command('visibility')
      .description('who may see this agent')
      .addArgument(new Argument('<level>', 'visibility level').choices(VISIBILITIES)),
  );
  action(app, visibility, async (run, level?: string) => {
    const p = await patchMe(run, { visibility: level as (typeof VISIBILITIES)[number] });
    run.print(p, () => `Visibility set to ${p.visibility}.\n`);
  });

  for (const c of [heartbeat, info, list, prune, recover, status, update, visibility, webhookCommand(app)])
    agent.addCommand(c);
  return agent;
}
