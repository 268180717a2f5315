/**
 * Where the relay may send a webhook. A webhook URL is chosen by an agent, so without a
 * policy the relay would POST into its own network (server-side request forgery).
 *
 * Refused unless SVC_RELAY_ALLOW_PRIVATE_WEBHOOKS=1: loopback, private (RFC 1918, unique
 * local), link-local, carrier-grade NAT. An IPv6 address that embeds an IPv4 address
 * (mapped, SIIT, compatible, NAT64, 6to4, Teredo) is judged by the address it carries.
 * Refused always, whatever the setting: cloud metadata services (169.254.169.254,
 * fd00:ec2::254, metadata.google.internal …), unspecified, multicast, broadcast,
 * documentation and other reserved ranges — none of them is a webhook receiver.
 *
 * The check runs on every address a name resolves to, when the URL is set and again at
 * each delivery (the relay connects to the address it checked, so a name re-pointed to
 * a private address in between — DNS rebinding — is caught).
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'carrier-grade NAT'
  | 'cloud metadata'
  | 'unspecified'
  | 'multicast'
  | 'reserved';

/** Classes the allow-private setting opens. */
const PRIVATE_CLASSES = new Set<AddressClass>(['loopback', 'private', 'link-local', 'carrier-grade NAT']);

const METADATA_ADDRESSES = new Set(['169.254.169.254', '169.254.170.2', '168.63.129.16', 'fd00:ec2::254']);
const METADATA_HOSTS = new Set(['metadata.google.internal', 'metadata.goog', 'metadata', 'instance-data']);

function blocks(entries: Array<[string, number]>, family: 'ipv4' | 'ipv6'): BlockList {
  const list = new BlockList();
  for (const [net, prefix] of entries) list.addSubnet(net, prefix, family);
  return list;
}

const V4: Array<[AddressClass, BlockList]> = [
  ['unspecified', blocks([['0.0.0.0', 8]], 'ipv4')],
  ['loopback', blocks([['127.0.0.0', 8]], 'ipv4')],
  [
    'private',
    blocks(
      [
        ['10.0.0.0', 8],
        ['172.16.0.0', 12],
        ['192.168.0.0', 16],
      ],
      'ipv4',
    ),
  ],
  ['link-local', blocks([['169.254.0.0', 16]], 'ipv4')],
  ['carrier-grade NAT', blocks([['100.64.0.0', 10]], 'ipv4')],
  ['multicast', blocks([['224.0.0.0', 4]], 'ipv4')],
  [
    'reserved',
    blocks(
      [
        ['192.0.0.0', 24],
        ['192.0.2.0', 24],
        ['198.18.0.0', 15],
        ['198.51.100.0', 24],
        ['203.0.113.0', 24],
        ['240.0.0.0', 4],
      ],
      'ipv4',
    ),
  ],
];

const V6: Array<[AddressClass, BlockList]> = [
  ['unspecified', blocks([['::', 128]], 'ipv6')],
  ['loopback', blocks([['::1', 128]], 'ipv6')],
  ['private', blocks([['fc00::', 7]], 'ipv6')],
  [
    'link-local',
    blocks(
      [
        ['fe80::', 10],
        ['fec0::', 10],
      ],
      'ipv6',
    ),
  ],
  ['multicast', blocks([['ff00::', 8]], 'ipv6')],
  [
    'reserved',
    blocks(
      [
        ['100::', 64], // discard
        ['2001:db8::', 32], // documentation
      ],
      'ipv6',
    ),
  ],
];

/** The 16 bytes of an IPv6 address (already known to be valid). */
function v6Bytes(address: string): number[] {
  let text = address.toLowerCase().split('%')[0] as string;
  const tail: number[] = [];
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    tail.push(...(v4[1] as string).split('.').map(Number));
    text = `${text.slice(0, -(v4[1] as string).length)}0:0`;
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const words = (s: string) => (s === '' ? [] : s.split(':').map((w) => Number.parseInt(w, 16)));
  const h = words(head);
  const r = rest === undefined ? [] : words(rest);
  const all = rest === undefined ? h : [...h, ...new Array(8 - h.length - r.length).fill(0), ...r];
  const bytes = all.flatMap((w) => [w >> 8, w & 0xff]);
  if (tail.length === 4) bytes.splice(12, 4, ...tail);
  return bytes;
}

/**
 * The IPv4 addresses an IPv6 address carries, by every form that embeds one: IPv4-mapped
 * (::ffff:0:0/96), SIIT (::ffff:0:0:0/96), IPv4-compatible (::/96), NAT64 (64:ff9b::/96 and
 * the local-use 64:ff9b:1::/48 in each RFC 6052 layout that fits it), 6to4 (2002::/16) and
 * Teredo (2001::/32: server, and client stored inverted). Undefined: no embedded address.
 * An empty list: a form that should embed one but is not well formed (refused as reserved).
 */
function embeddedV4(b: number[]): string[] | undefined {
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  const v4 = (...at: number[]) => at.map((i) => b[i]).join('.');
  if (zero(0, 10) && b[10] === 0xff && b[11] === 0xff) return [v4(12, 13, 14, 15)]; // ::ffff:a.b.c.d
  if (zero(0, 8) && b[8] === 0xff && b[9] === 0xff && zero(10, 12)) return [v4(12, 13, 14, 15)]; // ::ffff:0:a.b.c.d
  if (zero(0, 12)) return [v4(12, 13, 14, 15)]; // ::a.b.c.d (:: and ::1 are taken out before)
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b) {
    if (zero(4, 12)) return [v4(12, 13, 14, 15)]; // 64:ff9b::/96
    if (b[4] !== 0x00 || b[5] !== 0x01) return []; // rest of 64:ff9b::/32: unassigned
    // 64:ff9b:1::/48 takes any prefix from /48 to /96; bits 64-71 are always zero.
    if (b[8] !== 0) return [];
    const layouts: Array<[number[], number]> = [
      [[12, 13, 14, 15], 16], // /96: v4 after zero bytes 6-11
      [[9, 10, 11, 12], 13], // /64
      [[7, 9, 10, 11], 12], // /56
      [[6, 7, 9, 10], 11], // /48
    ];
    const found: string[] = [];
    for (const [at, suffixFrom] of layouts) {
      const prefixZero = at[0] === 12 ? zero(6, 12) : true;
      if (prefixZero && zero(suffixFrom, 16)) found.push(v4(...at));
    }
    return found;
  }
  if (b[0] === 0x20 && b[1] === 0x02) return [v4(2, 3, 4, 5)]; // 2002:aabb:ccdd::/48
  if (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0x00 && b[3] === 0x00) {
    // Teredo: the server, and the client's address with every bit inverted.
    const client = [12, 13, 14, 15].map((i) => (b[i] as number) ^ 0xff).join('.');
    return [v4(4, 5, 6, 7), client];
  }
  return undefined;
}

/** Classes from the most to the least restrictive, to judge an address that embeds several. */
const STRICTNESS: AddressClass[] = [
  'cloud metadata',
  'unspecified',
  'multicast',
  'reserved',
  'loopback',
  'link-local',
  'private',
  'carrier-grade NAT',
  'public',
];

/** The class of an IP address literal (IPv4 or IPv6). */
export function classifyAddress(literal: string): AddressClass {
  const address = literal.split('%')[0] as string; // an IPv6 zone does not change the class
  const family = isIP(address);
  if (family === 0) throw new TypeError(`not an IP address: ${address}`);
  if (METADATA_ADDRESSES.has(address.toLowerCase())) return 'cloud metadata';
  if (family === 4) {
    if (address === '255.255.255.255') return 'reserved';
    for (const [cls, list] of V4) if (list.check(address, 'ipv4')) return cls;
    return 'public';
  }
  const bytes = v6Bytes(address);
  const unspecifiedOrLoopback = bytes.slice(0, 15).every((x) => x === 0) && (bytes[15] as number) <= 1;
  const inner = unspecifiedOrLoopback ? undefined : embeddedV4(bytes);
  if (inner !== undefined) {
    // Judged by what it carries: the strictest class of its embedded addresses.
    const classes = inner.map((a) => classifyAddress(a));
    if (classes.length === 0) return 'reserved';
    return STRICTNESS.find((c) => classes.includes(c)) ?? 'public';
  }
  const canonical = Array.from({ length: 8 }, (_, i) =>
    (((bytes[2 * i] as number) << 8) | (bytes[2 * i + 1] as number)).toString(16),
  ).join(':');
  if (canonical === 'fd00:ec2:0:0:0:0:0:254') return 'cloud metadata';
  for (const [cls, list] of V6) if (list.check(address, 'ipv6')) return cls;
  return 'public';
}

export function addressAllowed(cls: AddressClass, allowPrivate: boolean): boolean {
  return cls === 'public' || (allowPrivate && PRIVATE_CLASSES.has(cls));
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export type Lookup = (host: string) => Promise<ResolvedAddress[]>;

const LOOKUP_TIMEOUT_MS = 5000;

/** The system resolver (getaddrinfo: /etc/hosts, then DNS), all addresses, bounded in time. */
export const systemLookup: Lookup = async (host) => {
  let timer: NodeJS.Timeout | undefined;
  try {
    const found = await Promise.race([
      dnsLookup(host, { all: true, verbatim: true }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(Object.assign(new Error(`lookup ${host} timed out`), { code: 'ETIMEOUT' })),
          LOOKUP_TIMEOUT_MS,
        );
      }),
    ]);
    return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
  } finally {
    clearTimeout(timer);
  }
};

/** Why the policy refused a host: a sentence for the agent or the log. */
export class AddressRefusedError extends Error {
  readonly code = 'address_refused';
  /** whether SVC_RELAY_ALLOW_PRIVATE_WEBHOOKS=1 would allow it (it is off, and the address is private) */
  readonly operatorCanAllow: boolean;
  constructor(message: string, operatorCanAllow = false) {
    super(message);
    this.operatorCanAllow = operatorCanAllow;
  }
}

/** `a loopback address`, `an unspecified address`. */
const anAddress = (cls: AddressClass) => `${/^[aeiou]/.test(cls) ? 'an' : 'a'} ${cls} address`;

/** Name resolution failed (no such name, resolver down): not a policy refusal. */
export class ResolutionError extends Error {
  readonly code = 'resolution_failed';
}

/** The URL host without IPv6 brackets. */
export const bareHost = (hostname: string): string =>
  hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;

/**
 * Resolves the host and checks every address. Returns them all (allowed) or throws
 * AddressRefusedError (a forbidden address or name) or ResolutionError.
 */
export async function resolveAllowed(
  hostname: string,
  opts: { allowPrivate: boolean; lookup?: Lookup },
): Promise<ResolvedAddress[]> {
  const host = bareHost(hostname).toLowerCase().replace(/\.$/, '');
  if (METADATA_HOSTS.has(host)) throw new AddressRefusedError(`${host} is a cloud metadata service`);
  let addresses: ResolvedAddress[];
  const literal = isIP(host);
  if (literal !== 0) {
    addresses = [{ address: host, family: literal === 6 ? 6 : 4 }];
  } else {
    try {
      addresses = await (opts.lookup ?? systemLookup)(host);
    } catch (err) {
      throw new ResolutionError(
        `${host} does not resolve (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
      );
    }
    if (addresses.length === 0) throw new ResolutionError(`${host} does not resolve`);
  }
  for (const a of addresses) {
    const cls = classifyAddress(a.address);
    if (!addressAllowed(cls, opts.allowPrivate)) {
      throw new AddressRefusedError(
        literal !== 0 ? `${a.address} is ${anAddress(cls)}` : `${host} resolves to ${a.address}, ${anAddress(cls)}`,
        !opts.allowPrivate && PRIVATE_CLASSES.has(cls),
      );
    }
  }
  return addresses;
}
