/** deployment fetch | add | list | inspect | remove | renew | audit | diagnose | migrate: trusted deployments. */
import { readFile } from 'node:fs/promises';
import type { DeploymentAudit, DeploymentDiagnosis, DeploymentInfo, RenewDeploymentInput } from '@svc/daemon/client';
import { Command } from 'commander';
import type { App } from '../app.js';
import { CliError, usageError } from '../errors.js';
import { action, isoTimeParser, withJson } from '../options.js';
import { keyValues, table } from '../output.js';

/** The text of a file named by an option (trust bundle, document, CA bundle). */
export async function readOptionFile(option: string, path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    // no such file is the command line's to change (exit 2), as for --file; anything else is the machine's
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'EISDIR' || code === 'ENOTDIR') throw usageError(`${option}: no file ${path}.`);
    throw new CliError('io_error', `Cannot read ${option} ${path}: ${(err as Error).message}`, { cause: err });
  }
}

function deploymentText(d: DeploymentInfo): string {
  return keyValues([
    ['name', d.name],
    ['deployment id', d.deployment_id],
    ['api url', d.api_url],
    ['tenants', d.tenants],
    ['relay keys', d.relay_key_ids],
    ['issued', d.issued_at],
    ['expires', d.expires_at],
    ['fetched', d.fetched_at],
  ]);
}

const STATUS_MARK = { ok: 'ok', warn: 'WARN', fail: 'FAIL', skipped: '--' } as const;

/** A diagnosis as a checklist: its verdict, then one line per check. */
function diagnosisText(d: DeploymentDiagnosis): string {
  const verdict = !d.verifies ? 'does not verify' : d.ok ? 'verifies; nothing to do' : 'verifies, with problems below';
  const width = Math.max(...d.checks.map((c) => c.check.length));
  const lines = d.checks.map((c) => `  ${STATUS_MARK[c.status].padEnd(4)}  ${c.check.padEnd(width)}  ${c.detail}`);
  return `Deployment ${d.name} (${d.deployment_id}) at ${d.at}: ${verdict}.\n${lines.join('\n')}\n`;
}

const alreadyTrusted = (d: DeploymentInfo) =>
  `Deployment ${d.deployment_id} is already trusted as ${d.name}; renewed its document.`;

const deploymentsTable = (rows: DeploymentInfo[]) =>
  table(
    [
      ['name', 'name'],
      ['deployment id', 'deployment_id'],
      ['api url', 'api_url'],
      ['expires', 'expires_at'],
    ],
    rows,
    'No deployments; add one with svc deployment fetch --url URL --trust FILE.',
  );

export function deploymentCommand(app: App): Command {
  const deployment = new Command('deployment').description('deployments this machine trusts (signed documents)');

  const add = withJson(
    new Command('add')
      .description('add a deployment from a signed document file')
      .requiredOption('--document <file>', 'signed deployment document (JWS)')
      .requiredOption('--trust <file>', 'out-of-band signer trust bundle')
      .option('--ca-bundle <file>', 'extra CA certificates (PEM) for the relay')
      .option('--name <name>', 'local name'),
  );
  action(app, add, async (run) => {
    const o = run.opts<{ document: string; trust: string; caBundle?: string; name?: string }>();
    const input = {
      document: await readOptionFile('--document', o.document),
      trust_bundle: await readOptionFile('--trust', o.trust),
      ...(o.caBundle ? { ca_bundle: await readOptionFile('--ca-bundle', o.caBundle) } : {}),
      ...(o.name ? { name: o.name } : {}),
    };
    const d = await (await run.link()).addDeployment(input);
    run.print(
      d,
      () => `${d.already_trusted ? alreadyTrusted(d) : `Added deployment ${d.name}.`}\n${deploymentText(d)}`,
    );
  });

  const audit = withJson(new Command('audit').description('check every trusted deployment'));
  action(app, audit, async (run) => {
    const rows = await (await run.link()).auditDeployments();
    run.print(rows, () =>
      table(
        [
          ['name', 'name'],
          ['deployment id', 'deployment_id'],
          ['ok', 'ok'],
          ['problems', 'problems'],
        ],
        rows.map((r: DeploymentAudit) => ({ ...r, ok: r.ok ? 'yes' : 'NO', problems: r.problems.join('; ') })),
        'No deployments.',
      ),
    );
    if (rows.some((r) => !r.ok)) app.exitCode = 1;
  });

  const diagnose = withJson(
    new Command('diagnose')
      .description('explain why a deployment does or does not verify')
      .argument('<name_or_id>', 'deployment name or id')
      .option('--at <time>', 'evaluate at this RFC 3339 time', isoTimeParser),
  );
  action(app, diagnose, async (run, nameOrId?: string) => {
    const o = run.opts<{ at?: string }>();
    const d = await (await run.link()).diagnoseDeployment(nameOrId!, o.at);
    run.print(d, () => diagnosisText(d));
    if (!d.ok) app.exitCode = 1;
  });

  const fetchCmd = withJson(
    new Command('fetch')
      .description("fetch a relay's deployment document and check it against a trust bundle")
      .requiredOption('--url <url>', 'relay base URL')
      .option('--trust <file>', 'signer trust bundle (required for self-hosted)')
      .option('--ca-bundle <file>', 'extra CA certificates (PEM) for the relay')
      .option('--name <name>', 'local name'),
  );
  action(app, fetchCmd, async (run) => {
    const o = run.opts<{ url: string; trust?: string; caBundle?: string; name?: string }>();
    if (!o.trust) throw usageError('A self-hosted deployment needs --trust FILE (the trust bundle from the operator).');
    const input = {
      url: o.url,
      trust_bundle: await readOptionFile('--trust', o.trust),
      ...(o.caBundle ? { ca_bundle: await readOptionFile('--ca-bundle', o.caBundle) } : {}),
      ...(o.name ? { name: o.name } : {}),
    };
    const d = await (await run.link()).fetchDeployment(input);
    run.print(
      d,
      () => `${d.already_trusted ? alreadyTrusted(d) : `Trusted deployment ${d.name}.`}\n${deploymentText(d)}`,
    );
  });

  const inspect = withJson(
    new Command('inspect').description('one deployment').argument('<name_or_id>', 'deployment name or id'),
  );
  action(app, inspect, async (run, name?: string) => {
    const d = await (await run.link()).getDeployment(name!);
    run.print(d, () => deploymentText(d));
  });

  const list = withJson(new Command('list').description('trusted deployments'));
  action(app, list, async (run) => {
    const rows = await (await run.link()).listDeployments();
    run.print(rows, () => deploymentsTable(rows));
  });

  const migrate = withJson(
    new Command('migrate')
      .description('move an agent to another deployment (hosted only: self-hosted deployments do not federate)')
      .requiredOption('--agent <agent>', 'local agent')
      .requiredOption('--deployment <name>', 'target deployment'),
  );
  action(app, migrate, async () => {
    throw new CliError(
      'not_supported_self_hosted',
      'Deployments do not federate: to move an agent, register a new agent on the other deployment (svc register --deployment NAME --enrollment-grant CODE).',
    );
  });

  const remove = withJson(
    new Command('remove').description('forget a deployment').argument('<name_or_id>', 'deployment name or id'),
  );
  action(app, remove, async (run, name?: string) => {
    // the daemon refuses one its agents are registered on (deployment_in_use)
    await (await run.link()).removeDeployment(name!);
    run.print({ name, removed: true }, () => `Removed deployment ${name}.\n`);
  });

  const renew = withJson(
    new Command('renew')
      .description('replace the deployment document (a newer one, or after a key rotation)')
      .argument('<name_or_id>', 'deployment name or id')
      .option('--url <url>', 'fetch the document from this relay base URL')
      .option('--document <file>', 'signed deployment document file')
      .option('--trust <file>', 'new signer trust bundle (key rotation)')
      .option('--ca-bundle <file>', 'extra CA certificates (PEM)'),
  );
  action(app, renew, async (run, name?: string) => {
    const o = run.opts<{ url?: string; document?: string; trust?: string; caBundle?: string }>();
    if (o.url && o.document) throw usageError('Give --url or --document, not both.');
    const input: RenewDeploymentInput = {};
    if (o.url) input.url = o.url;
    if (o.document) input.document = await readOptionFile('--document', o.document);
    if (o.trust) input.trust_bundle = await readOptionFile('--trust', o.trust);
    if (o.caBundle) input.ca_bundle = await readOptionFile('--ca-bundle', o.caBundle);
    const d = await (await run.link()).renewDeployment(name!, input);
    run.print(d, () => `Renewed deployment ${d.name}.\n${deploymentText(d)}`);
  });

  for (const c of [add, audit, diagnose, fetchCmd, inspect, list, migrate, remove, renew]) deployment.addCommand(c);
  return deployment;
}
