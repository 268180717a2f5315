/**
 * `svc doctor --api-url URL`: is there a relay at URL, is it ready, and is it a deployment
 * this machine trusts? What the relay says is its word: its readiness is shown as it said
 * it (printable, cut short), and only a document that verifies against a trust bundle held
 * here says which deployment it is.
 */
import { explainDeploymentDocument, printable, truncated } from '@svc/shared';
import type { DeploymentCheck, RelayCheck } from '../client/api.js';
import { DaemonError } from '../errors.js';
import { relayRequest } from '../relay/http.js';
import { fetchDocument } from './service.js';
import { type Deployment, decodeDocument, isHttpsOrLoopback } from './store.js';

const TIMEOUT_MS = 10_000;
/** The relay's own words, as shown: one line, at most this long. */
const said = (text: unknown) => truncated(printable(String(text)), 200);

export async function checkRelay(url: string, trusted: Deployment[]): Promise<RelayCheck> {
  const checks: DeploymentCheck[] = [];
  const done = () => ({ url, ok: checks.every((c) => c.status === 'ok'), checks });
  const skip = (names: string[], why: string) => {
    for (const check of names) checks.push({ check, status: 'skipped', detail: `not checked: ${why}` });
  };
  let base: URL;
  try {
    base = new URL(url);
  } catch {
    throw new DaemonError('validation_failed', `--api-url: not a URL: ${said(url)}`);
  }
  if (!isHttpsOrLoopback(base.href)) {
    checks.push({ check: 'url', status: 'fail', detail: `${base.origin} is not https (plain http only on loopback)` });
    skip(['healthz', 'readyz', 'document', 'trusted', 'api_url'], 'the URL is not https');
    return done();
  }
  checks.push({ check: 'url', status: 'ok', detail: base.origin });
  // the CA of a trusted deployment at this address, for a relay with a private CA
  const ca = trusted.find((d) => sameOrigin(d.doc.api_url, base.origin))?.ca_bundle ?? undefined;
  const target = { baseUrl: base.origin, ...(ca ? { ca } : {}) };

  try {
    const res = await relayRequest(target, { method: 'GET', path: '/healthz', timeoutMs: TIMEOUT_MS, maxBytes: 4096 });
    checks.push(
      res.status === 200
        ? { check: 'healthz', status: 'ok', detail: 'the relay answers' }
        : { check: 'healthz', status: 'fail', detail: `/healthz answered ${res.status}` },
    );
  } catch (err) {
    checks.push({ check: 'healthz', status: 'fail', detail: said((err as Error).message) });
    skip(['readyz', 'document', 'trusted', 'api_url'], 'the relay cannot be reached');
    return done();
  }

  try {
    const res = await relayRequest<{ checks?: Record<string, { ok?: unknown; detail?: unknown }> }>(target, {
      method: 'GET',
      path: '/readyz',
      timeoutMs: TIMEOUT_MS,
      maxBytes: 64 * 1024,
    });
    const parts = Object.entries(res.body?.checks ?? {}).map(
      ([name, c]) => `${said(name)} ${c?.ok === true ? 'ok' : `not ok${c?.detail ? ` (${said(c.detail)})` : ''}`}`,
    );
    checks.push(
      res.status === 200
        ? { check: 'readyz', status: 'ok', detail: `ready${parts.length ? `: ${parts.join(', ')}` : ''}` }
        : {
            check: 'readyz',
            status: 'fail',
            detail: `not ready (${res.status})${parts.length ? `: ${parts.join(', ')}` : ''}`,
          },
    );
  } catch (err) {
    checks.push({ check: 'readyz', status: 'fail', detail: said((err as Error).message) });
  }

  let jws: string;
  try {
    jws = await fetchDocument(base.origin, ca);
    checks.push({ check: 'document', status: 'ok', detail: 'serves a deployment document' });
  } catch (err) {
    checks.push({ check: 'document', status: 'fail', detail: said((err as Error).message) });
    skip(['trusted', 'api_url'], 'no deployment document');
    return done();
  }

  const claimed = claimedId(jws);
  const same = trusted.filter((d) => d.doc.deployment_id === claimed);
  let verified: { name: string; apiUrl: string } | undefined;
  let refusal: string | undefined;
  for (const d of same) {
    const r = await explainDeploymentDocument(jws, d.trust_bundle);
    if (!r.failed && r.doc) {
      verified = { name: d.name, apiUrl: r.doc.api_url };
      break;
    }
    refusal ??= `${r.failed?.error.code}: ${r.failed?.error.message} (trust bundle of ${d.name})`;
  }
  if (verified) {
    checks.push({
      check: 'trusted',
      status: 'ok',
      detail: `its document verifies as deployment ${verified.name} (${claimed})`,
    });
    checks.push(
      sameOrigin(verified.apiUrl, base.origin)
        ? { check: 'api_url', status: 'ok', detail: `the document names this address (${verified.apiUrl})` }
        : {
            check: 'api_url',
            status: 'warn',
            detail: `the document names ${verified.apiUrl}, not ${base.origin}: agents of ${verified.name} use that one`,
          },
    );
  } else {
    checks.push(
      refusal
        ? { check: 'trusted', status: 'fail', detail: refusal }
        : {
            check: 'trusted',
            status: 'warn',
            detail: `no deployment trusted here is ${claimed ? `deployment ${said(claimed)}` : 'this one'}: trust it with svc deployment fetch --url ${base.origin} --trust FILE (the trust bundle from its operator)`,
          },
    );
    skip(['api_url'], 'the document is not verified');
  }
  return done();
}

function sameOrigin(a: string, origin: string): boolean {
  try {
    return new URL(a).origin === origin;
  } catch {
    return false;
  }
}

/** The deployment id a document claims, before anything is verified: only to find the bundle to verify it with. */
function claimedId(jws: string): string | undefined {
  try {
    const id: unknown = decodeDocument(jws).deployment_id;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
}
