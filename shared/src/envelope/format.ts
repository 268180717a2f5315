/**
 * The envelope v1 wire format (browser-safe): header, strict parsing, and the exact bytes
 * that HPKE binds and Ed25519 signs. Both implementations (@noble and node:crypto) use
 * these functions, so their inputs to the primitives are identical.
 *
 *   info      = canonical JSON {"deployment_id":…,"svc":"envelope/v1","tenant_id":…}
 *   aad       = canonical JSON of the header (RFC 8785)
 *   enc, ct   = HPKE SealBase(pkR, info, aad, plaintext)
 *   signature = Ed25519(sender, canonical JSON
 *                 {"ciphertext":b64u(ct),"enc":b64u(enc),"header":header,"svc":"envelope/v1/signature"})
 *   envelope  = {header, enc: b64u(enc), ciphertext: b64u(ct), signature: b64u(signature)}
 *
 * All strings are unpadded base64url in their one canonical form.
 */
import { utf8 } from '../base64url.js';
import { EnvelopeError } from './errors.js';
import { N_ENC, N_T } from './hpke-suite.js';
import { ED25519_SIGNATURE_LENGTH } from './keys.js';
import { isMessageId, newMessageId, UUID_V7_PATTERN } from './message-id.js';

export const ENVELOPE_VERSION = 1;
export const CONVERSATION_TYPES = ['direct', 'group', 'broadcast'] as const;
export const CONTENT_TYPES = ['text', 'structured', 'media', 'control'] as const;
export type ConversationType = (typeof CONVERSATION_TYPES)[number];
export type ContentType = (typeof CONTENT_TYPES)[number];

/** Largest plaintext an envelope carries (media travels as an encrypted blob reference). */
export const ENVELOPE_MAX_PLAINTEXT_BYTES = 1024 * 1024;

/** Public agent number: letters, digits, `_`, `-`, at most 128 characters (spec). */
export const AGENT_NUMBER_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;
/** Conversation, deployment and tenant ids. */
export const ENVELOPE_ID_PATTERN = /^[A-Za-z0-9._:@-]{1,256}$/;
/** ISO-8601 UTC as `Date.prototype.toISOString` writes it (milliseconds optional). */
export const SENT_AT_PATTERN = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{3})?Z$/;

export interface EnvelopeHeader {
  v: 1;
  message_id: string;
  sender: string;
  recipient: string;
  conversation_id: string;
  conversation_type: ConversationType;
  content_type: ContentType;
  sent_at: string;
  deployment_id: string;
  tenant_id: string;
}

export interface Envelope {
  header: EnvelopeHeader;
  /** base64url of the 32-byte HPKE encapsulated key. */
  enc: string;
  /** base64url of the ChaCha20-Poly1305 ciphertext and tag. */
  ciphertext: string;
  /** base64url of the 64-byte Ed25519 signature. */
  signature: string;
}

const HEADER_KEYS = [
  'content_type',
  'conversation_id',
  'conversation_type',
  'deployment_id',
  'message_id',
  'recipient',
  'sender',
  'sent_at',
  'tenant_id',
  'v',
] as const;
const ENVELOPE_KEYS = ['ciphertext', 'enc', 'header', 'signature'] as const;

const B64URL_PATTERN = /^[A-Za-z0-9_-]*$/;
const B64URL_VALUE = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** Byte length of a canonical unpadded base64url string, or -1 if it is not one (no decoding). */
export function base64urlByteLength(text: string): number {
  if (typeof text !== 'string' || !B64URL_PATTERN.test(text)) return -1;
  return alphabetCheckedByteLength(text);
}

/** `base64urlByteLength` of text already known to hold only base64url characters. */
function alphabetCheckedByteLength(text: string): number {
  const rest = text.length % 4;
  if (rest === 1) return -1;
  if (rest !== 0) {
    const last = B64URL_VALUE.indexOf(text[text.length - 1] as string);
    if ((last & (rest === 2 ? 0x0f : 0x03)) !== 0) return -1;
  }
  return Math.floor((text.length * 3) / 4);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function hasExactKeys(value: Record<string, unknown>, keys: readonly string[]): boolean {
  const own = Object.keys(value);
  if (own.length !== keys.length) return false;
  for (const k of keys) if (!Object.hasOwn(value, k)) return false;
  return true;
}

const isConversationType = (v: unknown): v is ConversationType => v === 'direct' || v === 'group' || v === 'broadcast';
const isContentType = (v: unknown): v is ContentType =>
  v === 'text' || v === 'structured' || v === 'media' || v === 'control';

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const digits2 = (v: string, at: number): number => (v.charCodeAt(at) - 48) * 10 + (v.charCodeAt(at + 1) - 48);

/** `SENT_AT_PATTERN` plus real calendar ranges (no Date parsing on the hot path). */
function isSentAt(v: unknown): v is string {
  if (typeof v !== 'string' || !SENT_AT_PATTERN.test(v)) return false;
  const year = digits2(v, 0) * 100 + digits2(v, 2);
  const month = digits2(v, 5);
  const day = digits2(v, 8);
  if (month < 1 || month > 12 || day < 1 || day > (DAYS_IN_MONTH[month - 1] as number)) return false;
  if (month === 2 && day === 29 && !(year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0))) return false;
  return digits2(v, 11) < 24 && digits2(v, 14) < 60 && digits2(v, 17) < 60;
}

const malformed = (what: string): EnvelopeError => new EnvelopeError('envelope_malformed', `envelope: ${what}`);

/** Validates a header strictly and returns a fresh copy; throws `EnvelopeError`. */
export function parseEnvelopeHeader(value: unknown): EnvelopeHeader {
  if (!isPlainObject(value)) throw malformed('header must be an object');
  if (typeof value.v === 'number' && value.v !== ENVELOPE_VERSION) {
    throw new EnvelopeError('envelope_unsupported_version', `envelope version ${value.v} is not supported`);
  }
  if (!hasExactKeys(value, HEADER_KEYS))
    throw malformed(`header must have exactly the fields ${HEADER_KEYS.join(', ')}`);
  const h = value as Record<(typeof HEADER_KEYS)[number], unknown>;
  if (h.v !== ENVELOPE_VERSION) throw malformed('header.v must be 1');
  if (!isMessageId(h.message_id)) throw malformed('header.message_id must be a lowercase UUIDv7');
  if (typeof h.sender !== 'string' || !AGENT_NUMBER_PATTERN.test(h.sender)) throw malformed('header.sender');
  if (typeof h.recipient !== 'string' || !AGENT_NUMBER_PATTERN.test(h.recipient)) throw malformed('header.recipient');
  for (const k of ['conversation_id', 'deployment_id', 'tenant_id'] as const) {
    const v = h[k];
    if (typeof v !== 'string' || !ENVELOPE_ID_PATTERN.test(v)) throw malformed(`header.${k}`);
  }
  if (!isConversationType(h.conversation_type)) throw malformed('header.conversation_type');
  if (!isContentType(h.content_type)) throw malformed('header.content_type');
  if (!isSentAt(h.sent_at)) throw malformed('header.sent_at must be ISO-8601 UTC');
  // Keys in canonical (sorted) order, so JSON.stringify writes the canonical form.
  return {
    content_type: h.content_type as ContentType,
    conversation_id: h.conversation_id as string,
    conversation_type: h.conversation_type as ConversationType,
    deployment_id: h.deployment_id as string,
    message_id: h.message_id,
    recipient: h.recipient,
    sender: h.sender,
    sent_at: h.sent_at,
    tenant_id: h.tenant_id as string,
    v: ENVELOPE_VERSION,
  };
}

/**
 * Validates an untrusted envelope strictly (exact fields, types, canonical base64url,
 * key/tag/signature lengths, size limit) and returns a fresh copy; throws `EnvelopeError`
 * with code `envelope_malformed` or `envelope_unsupported_version`.
 */
export function parseEnvelope(value: unknown): Envelope {
  if (!isPlainObject(value)) throw malformed('must be a JSON object');
  const memo = parsedMemo.get(value);
  if (memo !== undefined && unchangedSince(value, memo)) return memo;
  const parsed = parseEnvelopeFresh(value);
  parsedMemo.set(value, parsed);
  return parsed;
}

/**
 * The last result of parsing each input object (a receiver verifies, then opens, the same
 * object). It is frozen, and reused only while every field of the input still holds the
 * exact validated value, so a later change to the input is always parsed afresh. Its
 * values never refer to their keys (see scanCanonicalEnvelopes).
 */
const parsedMemo = new WeakMap<object, Envelope>();

function unchangedSince(value: Record<string, unknown>, p: Envelope): boolean {
  const h = value.header;
  if (!isPlainObject(h)) return false;
  const ph = p.header;
  return (
    value.enc === p.enc &&
    value.ciphertext === p.ciphertext &&
    value.signature === p.signature &&
    h.v === ph.v &&
    h.message_id === ph.message_id &&
    h.sender === ph.sender &&
    h.recipient === ph.recipient &&
    h.conversation_id === ph.conversation_id &&
    h.conversation_type === ph.conversation_type &&
    h.content_type === ph.content_type &&
    h.sent_at === ph.sent_at &&
    h.deployment_id === ph.deployment_id &&
    h.tenant_id === ph.tenant_id &&
    Object.keys(value).length === ENVELOPE_KEYS.length &&
    Object.keys(h).length === HEADER_KEYS.length
  );
}

function parseEnvelopeFresh(value: Record<string, unknown>): Envelope {
  const header = parseEnvelopeHeader(value.header);
  if (!hasExactKeys(value, ENVELOPE_KEYS)) throw malformed(`must have exactly the fields ${ENVELOPE_KEYS.join(', ')}`);
  const { enc, ciphertext, signature } = value as Record<string, string>;
  const problem = sealedPartsProblem(enc as string, ciphertext as string, signature as string, base64urlByteLength);
  if (problem) throw malformed(problem);
  return frozenEnvelope(header, enc as string, ciphertext as string, signature as string);
}

/**
 * What is wrong with an envelope's three base64url parts, or undefined. `byteLength`
 * measures them: `base64urlByteLength`, or its alphabet-checked half when a pattern has
 * already checked the characters.
 */
function sealedPartsProblem(
  enc: string,
  ciphertext: string,
  signature: string,
  byteLength: (text: string) => number,
): string | undefined {
  if (byteLength(enc) !== N_ENC) return `enc must be ${N_ENC} bytes of base64url`;
  const ctLength = byteLength(ciphertext);
  if (ctLength < N_T || ctLength > ENVELOPE_MAX_PLAINTEXT_BYTES + N_T)
    return 'ciphertext must be base64url, at least the 16-byte tag, within the size limit';
  if (byteLength(signature) !== ED25519_SIGNATURE_LENGTH)
    return `signature must be ${ED25519_SIGNATURE_LENGTH} bytes of base64url`;
  return undefined;
}

/** A checked envelope, frozen, keys in canonical order (JSON.stringify writes the canonical form). */
function frozenEnvelope(header: EnvelopeHeader, enc: string, ciphertext: string, signature: string): Envelope {
  return Object.freeze({ ciphertext, enc, header: Object.freeze(header), signature });
}

/** Type guard form of `parseEnvelope`. */
export function isEnvelope(value: unknown): value is Envelope {
  try {
    parseEnvelope(value);
    return true;
  } catch {
    return false;
  }
}

/**
 * RFC 8785 canonical JSON of a *validated* header, written directly (keys in sorted
 * order); equal to `canonicalJson(header)`, which a test checks. No value needs JSON
 * escaping: every field's pattern above admits only ASCII letters, digits and `_-.:@`.
 */
export function headerCanonicalJson(h: EnvelopeHeader): string {
  return (
    `{"content_type":"${h.content_type}","conversation_id":"${h.conversation_id}",` +
    `"conversation_type":"${h.conversation_type}","deployment_id":"${h.deployment_id}",` +
    `"message_id":"${h.message_id}","recipient":"${h.recipient}","sender":"${h.sender}",` +
    `"sent_at":"${h.sent_at}","tenant_id":"${h.tenant_id}","v":${h.v}}`
  );
}

/** HPKE `info`: canonical JSON {"deployment_id":…,"svc":"envelope/v1","tenant_id":…}. */
export function envelopeInfoJson(deploymentId: string, tenantId: string): string {
  return `{"deployment_id":${JSON.stringify(deploymentId)},"svc":"envelope/v1","tenant_id":${JSON.stringify(tenantId)}}`;
}

export function envelopeInfo(deploymentId: string, tenantId: string): Uint8Array {
  return utf8(envelopeInfoJson(deploymentId, tenantId));
}

/** The signed message: canonical JSON {"ciphertext","enc","header","svc":"envelope/v1/signature"}. */
export function signatureInputJson(headerJson: string, enc: string, ciphertext: string): string {
  return `{"ciphertext":"${ciphertext}","enc":"${enc}","header":${headerJson},"svc":"envelope/v1/signature"}`;
}

/** The envelope's canonical JSON text (what travels and what project vectors pin). */
export function encodeEnvelope(envelope: Envelope): string {
  return (
    `{"ciphertext":"${envelope.ciphertext}","enc":"${envelope.enc}",` +
    `"header":${headerCanonicalJson(envelope.header)},"signature":"${envelope.signature}"}`
  );
}

/** Decodes and strictly validates envelope JSON text. */
export function decodeEnvelope(text: string): Envelope {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw new EnvelopeError('envelope_malformed', 'envelope: not JSON', { cause });
  }
  return parseEnvelope(value);
}

/** One envelope found by `scanCanonicalEnvelopes`: its text is `text.slice(start, end)`. */
export interface ScannedEnvelope {
  envelope: Envelope;
  start: number;
  end: number;
}

/**
 * What the scan reads: a string, or bytes read as latin1 text (one character per byte;
 * non-ASCII never scans), so that a caller holding a large body as bytes turns only each
 * envelope into a string, never the whole body at once.
 */
export interface ScanText {
  readonly length: number;
  charCodeAt(index: number): number;
  indexOf(search: string, position: number): number;
  slice(start: number, end: number): string;
  /**
   * Optional: how many bytes `text` decodes to as base64, with a decoder that skips every
   * character outside the base64 and base64url alphabets (Node's Buffer). With it the
   * ciphertext, most of an envelope, is checked by the native decoder instead of a
   * character class (see isBase64urlText).
   */
  decodedLength?(text: string): number;
}

const inner = (pattern: RegExp): string => pattern.source.slice(1, -1); // without ^ and $
const B64_CHARS = '[A-Za-z0-9_-]';
const SIGNATURE_CHARS = 86;
/** How a canonical envelope starts: its ciphertext, up to ENC_FIELD. */
const CIPHERTEXT_OPEN = '{"ciphertext":"';
/** What follows the ciphertext; a base64url value holds no quote, so its first occurrence ends it. */
const ENC_FIELD = '","enc":"';
/**
 * The rest of an envelope in exactly its canonical form, from ENC_FIELD to its end, built
 * from the same patterns parseEnvelope uses. Sticky: it matches only at lastIndex.
 */
const CANONICAL_AFTER_CIPHERTEXT = new RegExp(
  `","enc":"(${B64_CHARS}{43})",` +
    `"header":\\{"content_type":"(${CONTENT_TYPES.join('|')})","conversation_id":"(${inner(ENVELOPE_ID_PATTERN)})",` +
    `"conversation_type":"(${CONVERSATION_TYPES.join('|')})","deployment_id":"(${inner(ENVELOPE_ID_PATTERN)})",` +
    `"message_id":"(${inner(UUID_V7_PATTERN)})","recipient":"(${inner(AGENT_NUMBER_PATTERN)})",` +
    `"sender":"(${inner(AGENT_NUMBER_PATTERN)})","sent_at":"(${inner(SENT_AT_PATTERN)})",` +
    `"tenant_id":"(${inner(ENVELOPE_ID_PATTERN)})","v":${ENVELOPE_VERSION}\\},"signature":"(${B64_CHARS}{${SIGNATURE_CHARS}})"\\}`,
  'y',
);

/**
 * Whether `text`, which holds neither `+` nor `/` (the scan refuses a body that holds either),
 * holds only base64url characters. With a decoder that skips what is not base64
 * (`decodedLength`), a text decodes to the length its characters give
 * (alphabetCheckedByteLength) exactly when none was skipped; the decoder also takes `+` and
 * `/` (the other alphabet), hence the scan's check. Checked for every byte value at several
 * places and lengths (scan.test.ts). Without one: the character class. (A text that
 * alphabetCheckedByteLength refuses, -1, is refused here too; sealedPartsProblem would.)
 */
function isBase64urlText(text: string, decodedLength: ((text: string) => number) | undefined): boolean {
  if (decodedLength === undefined) return B64URL_PATTERN.test(text);
  return decodedLength(text) === alphabetCheckedByteLength(text);
}
/** The last field of a canonical envelope; no other field's value can hold a quote, so no other can hold this. */
const SIGNATURE_FIELD = '"signature":"';
/** From the header's closing brace to the signature's value. */
const HEADER_TO_SIGNATURE = `},${SIGNATURE_FIELD}`;
/** From the start of the signature field to the envelope's end: the field, the value, `"}`. */
const SIGNATURE_TO_END = SIGNATURE_FIELD.length + SIGNATURE_CHARS + 2;
const SEND_BODY_OPEN = '{"envelopes":[';
const SEND_BODY_CLOSE = ']}';

/**
 * The fast path for a send request body `{"envelopes":[…]}` written exactly in canonical
 * form (what `JSON.stringify` of sealed envelopes gives): finds each envelope and checks it
 * as strictly as `parseEnvelope`, without building a JSON tree or writing the canonical
 * bytes again. Returns null for anything else (other spacing or key order, escapes, a
 * field parseEnvelope would refuse, more than `max` envelopes): the caller then takes the
 * general path, JSON.parse plus parseEnvelope, which also words the error. Envelopes it
 * returns are the frozen values `parseEnvelope` would give.
 *
 * Each envelope is cut and checked on its own, so that bytes are turned into text one
 * envelope at a time (a 150 KiB body as one string cost the relay more than the pattern
 * did): its ciphertext ends at the first quote (base64url holds none), its header at the
 * first closing brace after that (no header value holds one), and its signature has a known
 * length. Each of those is a one-byte search, and no byte is searched twice (two string
 * searches, one of them over the ciphertext again, were a fifth of the scan's time). A cut
 * in the wrong place only fails the check.
 * The ciphertext, most of each envelope, is checked on its own (by the text's decoder when
 * it has one: a quarter of the scan's time in the relay), the rest by one pattern. They are
 * cut as two strings, so that a caller that keeps only the header keeps only the rest's
 * text alive, not the ciphertext's (the relay: see send-body.ts).
 *
 * They are not entered in parseEnvelope's memo: a memo entry whose value is its own key
 * keeps the envelope, and through its strings its text, alive until a full collection
 * (V8's young-generation collector keeps the values of a WeakMap's entries alive). The
 * relay does not parse them again, and the promotion of every body cost it more than its
 * ledger write (bench:relay).
 */
export function scanCanonicalEnvelopes(text: ScanText, max: number): ScannedEnvelope[] | null {
  const last = text.length - SEND_BODY_CLOSE.length;
  if (
    last < SEND_BODY_OPEN.length ||
    text.slice(0, SEND_BODY_OPEN.length) !== SEND_BODY_OPEN ||
    text.slice(last, text.length) !== SEND_BODY_CLOSE ||
    // No field of a canonical body can hold either (base64url values, the header's patterns,
    // JSON's punctuation): one search of the whole body spares one per ciphertext.
    text.indexOf('+', 0) >= 0 ||
    text.indexOf('/', 0) >= 0
  ) {
    return null;
  }
  const found: ScannedEnvelope[] = [];
  let at = SEND_BODY_OPEN.length;
  for (;;) {
    if (found.length === max) return null;
    if (!opensAt(text, CIPHERTEXT_OPEN, at)) return null;
    // the ciphertext's end first (a base64url value holds no quote: the first quote ends
    // it), then the signature from there: each byte is searched once
    const ciphertextEnd = text.indexOf('"', at + CIPHERTEXT_OPEN.length);
    if (ciphertextEnd < 0 || !opensAt(text, ENC_FIELD, ciphertextEnd)) return null;
    // no header value holds a brace: the first one after the ciphertext closes the header
    const headerEnd = text.indexOf('}', ciphertextEnd);
    if (headerEnd < 0 || !opensAt(text, HEADER_TO_SIGNATURE, headerEnd)) return null;
    const end = headerEnd + HEADER_TO_SIGNATURE.length - SIGNATURE_FIELD.length + SIGNATURE_TO_END;
    if (end > last) return null;
    const ciphertext = text.slice(at + CIPHERTEXT_OPEN.length, ciphertextEnd);
    if (!isBase64urlText(ciphertext, text.decodedLength)) return null;
    // the rest is a string of its own: the header's values, cut from it, keep it alive, not the ciphertext
    const rest = text.slice(ciphertextEnd, end);
    CANONICAL_AFTER_CIPHERTEXT.lastIndex = 0;
    const m = CANONICAL_AFTER_CIPHERTEXT.exec(rest);
    if (!m || CANONICAL_AFTER_CIPHERTEXT.lastIndex !== rest.length) return null;
    const envelope = scannedEnvelope(ciphertext, m);
    if (!envelope) return null;
    found.push({ envelope, start: at, end });
    if (end === last) return found;
    if (text.charCodeAt(end) !== 44 /* , */) return null;
    at = end + 1;
  }
}

/** Whether `text` holds `search` at `at`, read a character at a time (no string is made). */
function opensAt(text: ScanText, search: string, at: number): boolean {
  if (at + search.length > text.length) return false;
  for (let k = 0; k < search.length; k++) if (text.charCodeAt(at + k) !== search.charCodeAt(k)) return false;
  return true;
}

/** The captures of CANONICAL_AFTER_CIPHERTEXT, in order. */
type EnvelopeCaptures = [
  text: string,
  enc: string,
  contentType: ContentType,
  conversationId: string,
  conversationType: ConversationType,
  deploymentId: string,
  messageId: string,
  recipient: string,
  sender: string,
  sentAt: string,
  tenantId: string,
  signature: string,
];

function scannedEnvelope(ciphertext: string, m: RegExpExecArray): Envelope | null {
  const [
    ,
    enc,
    contentType,
    conversationId,
    conversationType,
    deploymentId,
    messageId,
    recipient,
    sender,
    sentAt,
    tenantId,
    signature,
  ] = m as unknown as EnvelopeCaptures;
  // What the pattern cannot say: calendar dates, lengths, canonical last characters.
  if (!isSentAt(sentAt)) return null;
  if (sealedPartsProblem(enc, ciphertext, signature, alphabetCheckedByteLength)) return null;
  const envelope = frozenEnvelope(
    {
      content_type: contentType,
      conversation_id: conversationId,
      conversation_type: conversationType,
      deployment_id: deploymentId,
      message_id: messageId,
      recipient,
      sender,
      sent_at: sentAt,
      tenant_id: tenantId,
      v: ENVELOPE_VERSION,
    },
    enc,
    ciphertext,
    signature,
  );
  return envelope;
}

export type EnvelopeHeaderFields = Omit<EnvelopeHeader, 'v' | 'message_id' | 'sent_at'> &
  Partial<Pick<EnvelopeHeader, 'message_id' | 'sent_at'>>;

/** Builds and validates a header, filling `v`, a new UUIDv7 `message_id` and `sent_at` (now). */
export function createEnvelopeHeader(fields: EnvelopeHeaderFields, now: Date = new Date()): EnvelopeHeader {
  return parseEnvelopeHeader({
    v: ENVELOPE_VERSION,
    message_id: fields.message_id ?? newMessageId(now.getTime()),
    sender: fields.sender,
    recipient: fields.recipient,
    conversation_id: fields.conversation_id,
    conversation_type: fields.conversation_type,
    content_type: fields.content_type,
    sent_at: fields.sent_at ?? now.toISOString(),
    deployment_id: fields.deployment_id,
    tenant_id: fields.tenant_id,
  });
}

/** Options of `openEnvelope` (both implementations). */
export interface OpenEnvelopeOptions {
  expectedRecipient: string;
  expectedDeploymentId: string;
  expectedTenantId: string;
  /** When given, the signature is verified first (`envelope_bad_signature` on failure). */
  senderEd25519Public?: Uint8Array;
}

export interface SealEnvelopeInput {
  header: EnvelopeHeader;
  plaintext: Uint8Array;
  recipientX25519Public: Uint8Array;
  senderEd25519Private: Uint8Array;
  /** Fixed ephemeral X25519 key — for test vectors only; never set it in production. */
  ephemeralPrivate?: Uint8Array;
}

/** Checks the routing bindings an opener expects (before any decryption). */
export function checkEnvelopeBindings(header: EnvelopeHeader, options: OpenEnvelopeOptions): void {
  if (header.recipient !== options.expectedRecipient) throw new EnvelopeError('envelope_wrong_recipient');
  if (header.deployment_id !== options.expectedDeploymentId || header.tenant_id !== options.expectedTenantId) {
    throw new EnvelopeError('envelope_binding_mismatch');
  }
}

/** The common API of the @noble and node:crypto envelope implementations. */
export interface EnvelopeApi {
  sealEnvelope(input: SealEnvelopeInput): Envelope;
  verifyEnvelope(envelope: Envelope, senderEd25519Public: Uint8Array): boolean;
  openEnvelope(envelope: Envelope, recipientX25519Private: Uint8Array, options: OpenEnvelopeOptions): Uint8Array;
}
