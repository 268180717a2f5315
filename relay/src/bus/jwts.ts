import {
  type Account,
  type Export,
  encodeAccount,
  encodeActivation,
  encodeOperator,
  encodeUser,
  fmtCreds,
  type Import,
  type OperatorLimits,
  type RevocationList,
  type User,
} from '@nats-io/jwt';
import type { KeyPair } from '@nats-io/nkeys';
import type { UplinkImport } from './sources.js';

/** Consumers allowed per tenant (the server counts the JWT's `consumer` limit per stream). */
export const DEFAULT_TENANT_CONSUMERS = 1024;

/**
 * Every limit written out. The server reads a missing limit as 0, and 0 denies:
 * an account without `subs` cannot subscribe, without `payload` cannot publish.
 * -1 means unlimited.
 */
export function tenantAccountLimits(
  consumers: number,
  diskStorage = -1,
): Required<Omit<OperatorLimits, 'tiered_limits'>> {
  return {
    subs: -1,
    conn: -1,
    leaf: -1,
    data: -1,
    payload: -1,
    imports: -1,
    exports: -1,
    wildcards: true,
    disallow_bearer: true,
    mem_storage: -1,
    // The account's whole file storage: the backstop behind its streams' own max_bytes.
    disk_storage: diskStorage,
    streams: -1,
    consumer: consumers,
    mem_max_stream_bytes: -1,
    disk_max_stream_bytes: -1,
    max_bytes_required: false,
    max_ack_pending: -1,
  };
}

/** The system account may not use JetStream: its storage limits are 0 on purpose. */
export function systemAccountLimits(): Required<Omit<OperatorLimits, 'tiered_limits'>> {
  return {
    ...tenantAccountLimits(0),
    mem_storage: 0,
    disk_storage: 0,
    streams: 0,
    consumer: 0,
    mem_max_stream_bytes: 0,
    disk_max_stream_bytes: 0,
    max_ack_pending: 0,
  };
}

export async function operatorJwt(operator: KeyPair, signing: KeyPair, systemAccountPub: string): Promise<string> {
  return encodeOperator('svc', operator, {
    // Accounts are signed with the signing key, so the identity seed can stay offline.
    signing_keys: [signing.getPublicKey()],
    system_account: systemAccountPub,
  });
}

export async function systemAccountJwt(systemAccount: KeyPair, operatorSigning: KeyPair): Promise<string> {
  const account: Partial<Account> = {
    limits: systemAccountLimits(),
    // The system account exports its $SYS services to nobody; no signing key is needed for its one user.
    exports: [],
    imports: [],
  };
  return encodeAccount('SYS', systemAccount.getPublicKey(), account, { signer: operatorSigning });
}

/**
 * An edge's uplink account holds nothing but its imports: no JetStream, no client
 * connections (its users connect as leaf nodes), no exports.
 */
export function uplinkAccountLimits(): Required<Omit<OperatorLimits, 'tiered_limits'>> {
  return { ...systemAccountLimits(), conn: 0, exports: 0 };
}

export interface TenantAccountClaims {
  name: string;
  accountPub: string;
  signingPub: string;
  consumers: number;
  /** Bytes of file storage for the whole account; -1 = no limit. */
  diskStorage?: number;
  revocations: RevocationList;
  /** what it exports: its sources' services (sourceExports) */
  exports: Export[];
}

export async function tenantAccountJwt(claims: TenantAccountClaims, operatorSigning: KeyPair): Promise<string> {
  const account: Partial<Account> = {
    limits: tenantAccountLimits(claims.consumers, claims.diskStorage),
    signing_keys: [claims.signingPub],
    revocations: claims.revocations,
    exports: claims.exports,
    imports: [],
  };
  return encodeAccount(claims.name, claims.accountPub, account, { signer: operatorSigning });
}

export interface UplinkAccountClaims {
  name: string;
  accountPub: string;
  signingPub: string;
  /** the tenant account that exports the sources, and signs the activations */
  tenantAccount: KeyPair;
  imports: UplinkImport[];
  revocations: RevocationList;
}

export async function uplinkAccountJwt(claims: UplinkAccountClaims, operatorSigning: KeyPair): Promise<string> {
  const tenantPub = claims.tenantAccount.getPublicKey();
  const imports: Import[] = [];
  const mappings: Record<string, Array<{ subject: string; weight: number }>> = {};
  for (const im of claims.imports) {
    const token = await encodeActivation(im.subject, claims.accountPub, claims.tenantAccount, 'service', {
      subject: im.subject,
    });
    imports.push({
      name: im.local,
      subject: im.subject,
      local_subject: im.local,
      account: tenantPub,
      token,
      type: 'service',
    });
    if (im.shield) mappings[im.local] = [{ subject: im.local, weight: 100 }];
  }
  // `mappings` (the account's subject mappings) is not in the library's Account type
  const account: Partial<Account> & { mappings: typeof mappings } = {
    limits: uplinkAccountLimits(),
    signing_keys: [claims.signingPub],
    revocations: claims.revocations,
    exports: [],
    imports,
    mappings,
  };
  return encodeAccount(claims.name, claims.accountPub, account, { signer: operatorSigning });
}

export interface UserClaims {
  name: string;
  pub?: string[];
  sub?: string[];
  connectionTypes?: string[];
  expiresInSeconds?: number;
  /** the JWT's `exp` (unix seconds); wins over expiresInSeconds */
  expiresAt?: number;
}

/**
 * A user JWT signed by the account's signing key (issuer_account = the account).
 * Without pub/sub lists the user may use every subject of its account.
 */
export async function userJwt(
  user: KeyPair,
  accountPub: string,
  signing: KeyPair,
  claims: UserClaims,
): Promise<string> {
  const nats: Partial<User> = { subs: -1, data: -1, payload: -1 };
  if (claims.pub) nats.pub = { allow: claims.pub };
  if (claims.sub) nats.sub = { allow: claims.sub };
  if (claims.connectionTypes)
    nats.allowed_connection_types = claims.connectionTypes as User['allowed_connection_types'];
  const exp =
    claims.expiresAt ??
    (claims.expiresInSeconds === undefined ? undefined : Math.floor(Date.now() / 1000) + claims.expiresInSeconds);
  return encodeUser(
    claims.name,
    user,
    accountPub,
    nats,
    exp === undefined ? { signer: signing } : { signer: signing, exp },
  );
}

export function credsFile(jwt: string, user: KeyPair): string {
  return new TextDecoder().decode(fmtCreds(jwt, user));
}
