/**
 * The receivers docs/webhooks.md prints, run as printed against a real relay process: the
 * complete receiver saved in the checkout (importing @svc/shared/node) and saved elsewhere
 * beside verify.mjs (node:crypto only, with the one import line the docs say to change).
 * Each gets a real signed delivery and logs it; each refuses a request with a forged
 * signature.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, tempDir, until } from '@svc/test-harness';
import { call, enrollAgent, sealFor, type TestAgent } from '@svc/test-harness/agent-client';
import { generateTestCertificates } from '@svc/test-harness/ca';
import { grantCode, type RelayProcess, spawnRelay } from '@svc/test-harness/relay-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const checkout = fileURLToPath(new URL('../../', import.meta.url));
const doc = readFileSync(join(checkout, 'docs/webhooks.md'), 'utf8');

/** The fenced js block whose first line is `// <name> …`. */
function block(name: string): string {
  const m = new RegExp(`\`\`\`js\\n(// ${name.replace('.', '\\.')} [^\\n]*\\n[\\s\\S]*?)\`\`\``).exec(doc);
  if (!m) throw new Error(`docs/webhooks.md has no js block starting // ${name}`);
  return m[1] as string;
}

/** The import line the docs tell a standalone receiver to use instead. */
const standaloneImport = (() => {
  const m = /change the receiver's last import line to\s+`([^`]+)`/.exec(doc);
  if (!m) throw new Error('docs/webhooks.md no longer says which import line to change');
  return m[1] as string;
})();

interface Receiver {
  port: number;
  child: ChildProcess;
  output: () => string;
}

let relay: RelayProcess;
let certDir: string;
let inCheckout: string;
const children: ChildProcess[] = [];
const agents: Record<string, TestAgent> = {};

/** Starts a receiver file as the docs say: SVC_WEBHOOK_SECRET, PORT and TLS files, from another directory. */
async function startReceiver(file: string, secret: string, port: number): Promise<Receiver> {
  const child = spawn(process.execPath, [file], {
    cwd: tempDir('svc-receiver-cwd-'),
    env: {
      PATH: process.env.PATH ?? '',
      SVC_WEBHOOK_SECRET: secret,
      PORT: String(port),
      TLS_CERT_FILE: join(certDir, 'cert.pem'),
      TLS_KEY_FILE: join(certDir, 'key.pem'),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  child.stdout?.on('data', (d) => {
    out += d;
  });
  child.stderr?.on('data', (d) => {
    out += d;
  });
  await until(() => out.includes(`listening on ${port}`) || child.exitCode !== null, 15_000, 'the receiver to listen');
  if (child.exitCode !== null) throw new Error(`${file} exited: ${out}`);
  return { port, child, output: () => out };
}

/** Points `name`'s webhook at the receiver's port; the secret the relay shows once. */
async function setEndpoint(name: string, port: number): Promise<string> {
  const res = await call<{ webhook_secret?: string }>(
    relay.url,
    'PATCH',
    '/api/v1/agents/me',
    { endpoint_url: `https://127.0.0.1:${port}/hook` },
    (agents[name] as TestAgent).auth,
  );
  if (res.status !== 200 || !res.body.webhook_secret) throw new Error(JSON.stringify(res.body));
  return res.body.webhook_secret;
}

/** A POST with a forged signature, as anyone on the network could send. */
function forged(port: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ event: 'message.received', id: 'evt_forged', message_id: 'x', agent_id: 'y' });
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/hook',
        method: 'POST',
        ca: readFileSync(join(certDir, 'ca.pem')),
        headers: {
          'content-type': 'application/json',
          'x-svc-signature': `sha256=${'0'.repeat(64)}`,
          'x-svc-timestamp': String(Math.floor(Date.now() / 1000)),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (d) => {
          text += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

beforeAll(async () => {
  const certs = await generateTestCertificates();
  certDir = tempDir('svc-receiver-tls-');
  writeFileSync(join(certDir, 'cert.pem'), certs.certPem);
  writeFileSync(join(certDir, 'key.pem'), certs.keyPem, { mode: 0o600 });
  writeFileSync(join(certDir, 'ca.pem'), certs.caPem);
  relay = await spawnRelay({
    env: { SVC_RELAY_ALLOW_PRIVATE_WEBHOOKS: '1', SVC_RELAY_WEBHOOK_CA_FILE: join(certDir, 'ca.pem') },
  });
  for (const name of ['alice', 'bob', 'carol'])
    agents[name] = await enrollAgent(relay.url, await grantCode(relay, name));
  // "save the file at the checkout's top level": a folder inside the checkout resolves
  // @svc/shared the same way, and node_modules keeps it out of git and of other tests
  inCheckout = join(checkout, 'node_modules', '.cache', `svc-webhooks-doc-${process.pid}`);
  mkdirSync(inCheckout, { recursive: true });
}, 90_000);

afterAll(async () => {
  for (const c of children) c.kill('SIGTERM');
  await relay?.stop();
  if (inCheckout) rmSync(inCheckout, { recursive: true, force: true });
});

/** Sends alice → `to` and waits for the receiver's log line of that message. */
async function deliveredTo(to: string, receiver: Receiver): Promise<void> {
  const envelope = sealFor(agents.alice as TestAgent, agents[to] as TestAgent, `hello ${to}`);
  const sent = await call(
    relay.url,
    'POST',
    '/api/v1/messages',
    { envelopes: [envelope] },
    (agents.alice as TestAgent).auth,
  );
  expect(sent.status).toBe(202);
  const line = new RegExp(`message\\.received evt_\\S+: message ${envelope.header.message_id} for ${to}`);
  await until(() => line.test(receiver.output()), 20_000, `the receiver's line for ${to}`);
}

/** Sets `to`'s endpoint to a free port, starts the receiver there with the secret shown, and checks both paths. */
async function receives(to: string, file: string): Promise<void> {
  const port = await freePort();
  const receiver = await startReceiver(file, await setEndpoint(to, port), port);
  await deliveredTo(to, receiver);
  expect(await forged(port)).toEqual({ status: 401, body: 'bad_signature' });
  await until(() => receiver.output().includes('refused: bad_signature'), 5_000, 'the refusal in its log');
}

describe('the webhook receivers of docs/webhooks.md, as printed', () => {
  it('the complete receiver, saved in the checkout: a real delivery logged, a forged one refused', async () => {
    const file = join(inCheckout, 'receiver.mjs');
    writeFileSync(file, block('receiver.mjs'));
    await receives('bob', file);
  }, 60_000);

  it('the receiver with verify.mjs beside it, outside any checkout: the same', async () => {
    const dir = tempDir('svc-receiver-standalone-');
    const receiver = block('receiver.mjs');
    const lastImport = receiver
      .split('\n')
      .filter((l) => l.startsWith('import '))
      .pop() as string;
    expect(lastImport).toContain("from '@svc/shared/node'");
    writeFileSync(join(dir, 'receiver.mjs'), receiver.replace(lastImport, standaloneImport));
    writeFileSync(join(dir, 'verify.mjs'), block('verify.mjs'));
    await receives('carol', join(dir, 'receiver.mjs'));
  }, 60_000);
});
