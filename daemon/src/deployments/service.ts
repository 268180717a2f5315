/**
 * fetch / add / renew: obtain the signed document (from {url}/.well-known/svc-deployment
 * or as given), verify it against the trust bundle, then store it under a name.
 */
import type { Logger } from 'pino';
import type {
  AddDeploymentInput,
  DeploymentAudit,
  DeploymentDiagnosis,
  DeploymentInfo,
  FetchDeploymentInput,
  RenewDeploymentInput,
} from '../client/api.js';
import { DaemonError } from '../errors.js';
import { isLocalName } from '../paths.js';
import { relayRequest } from '../relay/http.js';
import {
  auditDeployment,
  type Deployment,
  type DeploymentStore,
  deploymentInfo,
  diagnoseDeployment,
  parseBundleText,
  verifyDocument,
} from './store.js';

export const WELL_KNOWN_PATH = '/.well-known/svc-deployment';

export async function fetchDocument(url: string, ca?: string): Promise<string> {
  let base: URL;
  try {
    base = new URL(url);
  } catch {
    throw new DaemonError('validation_failed', `not a URL: ${url}`);
  }
  const res = await relayRequest<unknown>(
    { baseUrl: base.origin, ...(ca ? { ca } : {}) },
    {
      method: 'GET',
      path: WELL_KNOWN_PATH,
      timeoutMs: 10_000,
      // a document is a few KiB; this is far beyond any real one
      maxBytes: 1024 * 1024,
      headers: { accept: 'application/jose, application/json, text/plain' },
    },
  );
  if (res.status !== 200) {
    throw new DaemonError('deployment_malformed', `${url}${WELL_KNOWN_PATH} answered ${res.status}`);
  }
  // The document is a compact JWS; accept it as text or wrapped in JSON ({document}).
  if (typeof res.body === 'string') return res.body.trim();
  const wrapped = (res.body as { document?: unknown; jws?: unknown } | undefined) ?? {};
  const jws = typeof wrapped.document === 'string' ? wrapped.document : wrapped.jws;
  if (typeof jws !== 'string') throw new DaemonError('deployment_malformed', 'the relay served no deployment document');
  return jws.trim();
}

export class DeploymentService {
  readonly store: DeploymentStore;
  readonly #log: Logger;
  readonly #usedBy: (name: string) => string[];

  /** `usedBy`: the names of the local agents registered on a deployment (by its name). */
  constructor(store: DeploymentStore, log: Logger, usedBy: (name: string) => string[] = () => []) {
    this.store = store;
    this.#log = log;
    this.#usedBy = usedBy;
  }

  /**
   * A readable name for a deployment added without one: the relay's host (relay.example.com,
   * 127.0.0.1-8787), with -2, -3 … when taken; the deployment id only if the host makes no name.
   */
  #defaultName(apiUrl: string, deploymentId: string): string {
    let base: string;
    try {
      const u = new URL(apiUrl);
      base = (u.port ? `${u.hostname}-${u.port}` : u.hostname)
        .replace(/[^A-Za-z0-9_.-]/g, '-')
        .replace(/^[^A-Za-z0-9]+/, '');
    } catch {
      base = '';
    }
    if (!isLocalName(base)) return deploymentId;
    let name = base;
    for (let n = 2; this.store.has(name); n++) name = `${base}-${n}`;
    return name;
  }

  async #addVerified(
    jws: string,
    bundleText: string,
    opts: { name?: string; ca?: string; url: string | null },
  ): Promise<DeploymentInfo> {
    const bundle = parseBundleText(bundleText);
    const doc = await verifyDocument(jws, bundle);
    const name = opts.name ?? this.#defaultName(doc.api_url, doc.deployment_id);
    if (!isLocalName(name)) throw new DaemonError('validation_failed', `invalid deployment name ${name}`);
    if (this.store.has(name)) throw new DaemonError('deployment_exists', `A deployment named ${name} exists.`);
    const saved = this.store.save({
      name,
      url: opts.url,
      document: jws,
      trust_bundle: bundle,
      ca_bundle: opts.ca ?? null,
      fetched_at: new Date().toISOString(),
    });
    this.#log.info({ deployment: name, deployment_id: doc.deployment_id }, 'deployment trusted');
    return deploymentInfo(saved);
  }

  async fetch(input: FetchDeploymentInput): Promise<DeploymentInfo> {
    const jws = await fetchDocument(input.url, input.ca_bundle);
    return (
      (await this.#renewKnown(jws, input)) ??
      this.#addVerified(jws, input.trust_bundle, { name: input.name, ca: input.ca_bundle, url: input.url })
    );
  }

  async add(input: AddDeploymentInput): Promise<DeploymentInfo> {
    const jws = input.document.trim();
    return (
      (await this.#renewKnown(jws, input)) ??
      this.#addVerified(jws, input.trust_bundle, { name: input.name, ca: input.ca_bundle, url: null })
    );
  }

  /**
   * A document given without a name, of a deployment already trusted here: that entry is
   * renewed, with renew's checks (an older document is refused), instead of a second entry
   * `<name>-2` for the same deployment. Undefined when the deployment is new here (or a
   * name was given: a second entry, on purpose).
   */
  async #renewKnown(
    jws: string,
    input: { name?: string; trust_bundle: string; ca_bundle?: string },
  ): Promise<DeploymentInfo | undefined> {
    if (input.name !== undefined) return undefined;
    const doc = await verifyDocument(jws, parseBundleText(input.trust_bundle));
    const known = this.store.byDeploymentId(doc.deployment_id);
    if (!known) return undefined;
    const renewed = await this.renew(known.name, {
      document: jws,
      trust_bundle: input.trust_bundle,
      ...(input.ca_bundle !== undefined ? { ca_bundle: input.ca_bundle } : {}),
    });
    return { ...renewed, already_trusted: true };
  }

  list(): DeploymentInfo[] {
    return this.store.list().map(deploymentInfo);
  }

  /** A deployment by its local name or its deployment id, as the commands take it. */
  get(nameOrId: string): Deployment {
    if (isLocalName(nameOrId) && this.store.has(nameOrId)) return this.store.get(nameOrId);
    const byId = this.store.byDeploymentId(nameOrId);
    if (byId) return byId;
    throw new DaemonError(
      'unknown_deployment',
      `No trusted deployment with the name or id ${JSON.stringify(nameOrId)}.`,
    );
  }

  remove(nameOrId: string): void {
    const name = this.get(nameOrId).name;
    // an agent keeps the name of its deployment: removing it would leave the agent without
    // its document (relay keys, leaf URL, CA) while nothing said so
    const users = this.#usedBy(name);
    if (users.length > 0) {
      throw new DaemonError(
        'deployment_in_use',
        `Deployment ${name} is used by local agent${users.length > 1 ? 's' : ''} ${users.join(', ')}; deregister ${users.length > 1 ? 'them' : 'it'} first (svc deregister NAME --yes), then remove the deployment.`,
      );
    }
    this.store.remove(name);
    this.#log.info({ deployment: name }, 'deployment removed');
  }

  /**
   * Replaces the document with a newer one of the same deployment. An older one (or
   * another one issued at the same time) is refused: the bundle signed it too, but
   * replaying it could bring back relay keys or URLs that were since retired.
   */
  async renew(nameOrId: string, input: RenewDeploymentInput): Promise<DeploymentInfo> {
    const current = this.get(nameOrId);
    const name = current.name;
    const bundle = input.trust_bundle ? parseBundleText(input.trust_bundle) : current.trust_bundle;
    const ca = input.ca_bundle ?? current.ca_bundle ?? undefined;
    const url = input.url ?? current.url ?? current.doc.api_url;
    const jws = input.document?.trim() ?? (await fetchDocument(url, ca));
    const doc = await verifyDocument(jws, bundle, { expectedDeploymentId: current.doc.deployment_id });
    const offered = Date.parse(doc.issued_at);
    if (!Number.isFinite(offered)) {
      throw new DaemonError('deployment_malformed', 'the deployment document has no valid issued_at');
    }
    const held = Date.parse(current.doc.issued_at);
    if (offered < held || (offered === held && jws !== current.document)) {
      throw new DaemonError(
        'deployment_stale',
        `This document was issued at ${doc.issued_at}, before the trusted one (${current.doc.issued_at}); fetch the current one.`,
      );
    }
    const saved = this.store.save({
      name,
      url: input.document ? current.url : url,
      document: jws,
      trust_bundle: bundle,
      ca_bundle: ca ?? null,
      fetched_at: new Date().toISOString(),
    });
    this.#log.info({ deployment: name }, 'deployment renewed');
    return deploymentInfo(saved);
  }

  async audit(): Promise<DeploymentAudit[]> {
    return Promise.all(this.store.list().map((d) => auditDeployment(d)));
  }

  /** Every check of one deployment at a time (now by default), and why it passed or failed. */
  async diagnose(nameOrId: string, at?: string): Promise<DeploymentDiagnosis> {
    const when = at === undefined ? new Date() : new Date(at);
    if (Number.isNaN(when.getTime())) throw new DaemonError('validation_failed', `not a time: ${at}`);
    return diagnoseDeployment(this.get(nameOrId), when);
  }
}
