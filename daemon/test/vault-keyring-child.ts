/**
 * Child process for vault-keyring.test.ts, run inside a private D-Bus session with an
 * unlocked gnome-keyring (a real Secret Service):
 *
 *   node vault-keyring-child.mjs write|read <homeA> <homeB>
 *
 * (the test compiles it to daemon/.tmp/). It runs the built daemon (daemon/dist, as
 * svc-daemon does; the test setup builds it): each step is a process of its own, and tsx
 * compiling the daemon's sources again for each cost more than the step.
 * `write` starts the real daemon from the environment (SVC_HOME=<homeA>, no passphrase)
 * and reports its status, then stores the secrets given in SVC_TEST_SECRETS (JSON) in the
 * vaults of both homes. `read` (a new process) opens the vaults again, reads the secrets
 * back, checks them in the Secret Service directly and deletes homeA's. The `unreachable-*`
 * steps, run between them (at once), open homeA with its keyring out of reach. Each prints
 * one line: `RESULT <step> <json>`.
 */
import { Entry } from '@napi-rs/keyring';
import { DaemonClient } from '../dist/client/index.js';
import { configFromEnv, createDaemon, homePaths } from '../dist/index.js';
import {
  forgetAgentSecrets,
  keyringService,
  loadApiKey,
  loadSeed,
  openVault,
  storeApiKey,
  storeSeed,
  type Vault,
} from '../dist/vault/index.js';

interface Secrets {
  a: { seed: string; apiKey: string };
  b: { seed: string; apiKey: string };
}

const args = process.argv.slice(2);
if (args.length !== 3) throw new Error('usage: vault-keyring-child.ts <step> <homeA> <homeB>');
const [step, homeA, homeB] = args as [string, string, string];
const secrets = JSON.parse(process.env.SVC_TEST_SECRETS ?? '') as Secrets;
const AGENT = 'alice';

const open = (home: string): Vault => openVault({ home, file: homePaths(home).vaultFile, backend: 'auto' });
const seedText = (seed: Uint8Array) => Buffer.from(seed).toString('base64url');
const read = (v: Vault) => {
  const seed = v.get(`agent/${AGENT}/seed`) === undefined ? null : seedText(loadSeed(v, AGENT));
  return { seed, apiKey: loadApiKey(v, AGENT) ?? null };
};

async function write(): Promise<unknown> {
  // the real daemon, configured from the environment like svc-daemon
  const daemon = createDaemon(configFromEnv());
  await daemon.start();
  let daemonStatus: { home: string; vault: unknown };
  try {
    daemonStatus = await new DaemonClient({ home: homeA }).status();
  } finally {
    await daemon.close();
  }
  const vaults = { a: open(homeA), b: open(homeB) };
  for (const k of ['a', 'b'] as const) {
    storeSeed(vaults[k], AGENT, new Uint8Array(Buffer.from(secrets[k].seed, 'base64url')));
    storeApiKey(vaults[k], AGENT, secrets[k].apiKey);
  }
  return {
    daemon: { home: daemonStatus.home, vault: daemonStatus.vault },
    kinds: { a: vaults.a.kind, b: vaults.b.kind },
    readBack: { a: read(vaults.a), b: read(vaults.b) },
  };
}

function readAndDelete(): unknown {
  const vaults = { a: open(homeA), b: open(homeB) };
  const before = { a: read(vaults.a), b: read(vaults.b) };
  // straight from the Secret Service, under the service named after the home
  const direct = {
    a: new Entry(keyringService(homeA), `agent/${AGENT}/api_key`).getPassword() ?? null,
    b: new Entry(keyringService(homeB), `agent/${AGENT}/api_key`).getPassword() ?? null,
  };
  forgetAgentSecrets(vaults.a, AGENT);
  forgetAgentSecrets(vaults.a, AGENT); // deleting what is gone is not an error
  const after = { a: read(open(homeA)), b: read(open(homeB)) };
  return { kinds: { a: vaults.a.kind, b: vaults.b.kind }, before, direct, after };
}

/**
 * Run with the session bus out of reach: the keyring holding homeA's secrets is
 * unreachable. `unreachable-daemon`: the daemon still starts and says so.
 * `unreachable-vault`: the vault refuses every access. Separate processes: after a first failed call,
 * the keyring library answered later calls in the same process from a store of its own.
 */
async function unreachableDaemon(): Promise<unknown> {
  const daemon = createDaemon(configFromEnv());
  await daemon.start();
  try {
    return { vault: (await new DaemonClient({ home: homeA }).status()).vault };
  } finally {
    await daemon.close();
  }
}

function unreachableVault(): unknown {
  try {
    return { read: open(homeA).get(`agent/${AGENT}/seed`) ?? null };
  } catch (err) {
    return { refused: (err as { code?: string }).code };
  }
}

const steps: Record<string, () => unknown> = {
  write,
  'unreachable-daemon': unreachableDaemon,
  'unreachable-vault': unreachableVault,
  read: readAndDelete,
};
const run = steps[step];
if (!run) throw new Error(`unknown step ${step}`);
const result = await run();
process.stdout.write(`RESULT ${step} ${JSON.stringify(result)}\n`);
