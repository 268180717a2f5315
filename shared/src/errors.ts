/**
 * The one error catalog. Every failure a user can meet has a stable code, an HTTP
 * status and a one-line message that says what to do. The same code travels through
 * the relay, the daemon socket and the CLI (`{error, message}`).
 */
export const ERROR_CATALOG = {
  // generic request errors
  bad_request: { status: 400, message: 'The request is malformed; check the body against the API schema.' },
  invalid_json: { status: 400, message: 'The request body is not valid JSON.' },
  validation_failed: { status: 400, message: 'A field of the request is missing or invalid.' },
  payload_too_large: { status: 413, message: 'The request body is larger than the relay accepts.' },
  unsupported_media_type: { status: 415, message: 'Send the request body as application/json.' },
  not_found: { status: 404, message: 'No such resource.' },
  method_not_allowed: { status: 405, message: 'This method is not allowed on this path.' },
  rate_limited: { status: 429, message: 'Too many requests; retry later.' },
  internal_error: {
    status: 500,
    message: 'The relay failed unexpectedly; the operator can find the request id in its log.',
  },

  // administrator bearer tokens
  missing_token: { status: 401, message: 'Send an OIDC access token as "Authorization: Bearer <token>".' },
  invalid_token: { status: 401, message: 'The bearer token is invalid, expired or not issued for this relay.' },
  unsupported_algorithm: {
    status: 401,
    message: 'The token is signed with an algorithm the relay does not accept (RS256, ES256, EdDSA only).',
  },
  invalid_client_id: { status: 401, message: 'The token was not issued to the configured client (azp).' },
  invalid_roles: {
    status: 401,
    message: 'The token carries no roles, or a role other than admin, auditor, automation, member.',
  },
  insufficient_scope: { status: 403, message: 'The token lacks the scope this route requires (enrollment:grant).' },
  binding_mismatch: {
    status: 403,
    message: 'The request names a deployment or tenant this token or relay is not bound to.',
  },
  authority_unavailable: {
    status: 503,
    message: 'The relay could not fetch the authority key set; retry, and check the authority settings.',
  },

  // agent authentication
  invalid_enrollment: {
    status: 403,
    message: 'The enrollment was refused; ask the operator for a new enrollment code.',
  },
  invalid_challenge_request: { status: 401, message: 'The sign-in challenge request was refused.' },
  invalid_sign_in: { status: 401, message: 'The sign-in was refused; request a new challenge and sign it.' },
  invalid_api_key: {
    status: 401,
    message: 'The API key is unknown, expired or revoked; sign in again with your identity key.',
  },
  capability_required: { status: 403, message: 'This identity lacks the capability this route requires.' },

  // availability
  ledger_closed: {
    status: 503,
    message: 'The relay ledger cannot answer; retry later, and the operator should inspect the relay.',
  },
  ledger_unavailable: {
    status: 503,
    message:
      'The relay cannot open its PostgreSQL ledger; check that the server runs and the DSN file (host, port, user, password, database).',
  },
  bus_unavailable: { status: 503, message: 'The relay cannot reach its message bus; retry later.' },
  revocation_unavailable: {
    status: 503,
    message:
      'Cleanup of the revoked prior identity could not finish; retry the same request after the relay is repaired.',
  },
  source_cleanup_failed: {
    status: 503,
    message:
      "Cleanup of the prior identity's named sources failed; retry the same request after the relay is repaired.",
  },

  // agent profiles, block, mute, report, contacts
  invalid_endpoint_url: {
    status: 400,
    message:
      'endpoint_url must be an absolute https URL without user name or password, at most 2048 characters, on a public address (not loopback, private, link-local or cloud metadata).',
  },
  invalid_timezone: { status: 400, message: 'timezone must be an IANA time zone name such as Europe/Paris.' },
  invalid_report_reason: { status: 400, message: 'The report reason must be 10 to 2000 characters after trimming.' },
  cannot_target_self: { status: 400, message: 'An agent cannot block, mute, report or add itself as a contact.' },

  // key directory
  invalid_key_record: {
    status: 400,
    message:
      'The key record is malformed: each key must be 32 bytes in canonical base64url (the X25519 key not a low-order point) and created_at an RFC 3339 time.',
  },
  invalid_key_signature: {
    status: 400,
    message:
      "signature must be the new signing key's Ed25519 signature over the svc.key-record/v1 statement with version = current version + 1.",
  },
  previous_signature_required: {
    status: 400,
    message: "A new signing key needs previous_signature: the current signing key's signature over the same statement.",
  },
  invalid_previous_signature: {
    status: 400,
    message:
      "previous_signature must be the current signing key's Ed25519 signature over the same svc.key-record/v1 statement.",
  },
  key_record_stale: {
    status: 400,
    message: 'created_at must be within 5 minutes of the relay clock; check the clock and sign a fresh record.',
  },
  key_reused: { status: 400, message: 'A retired key cannot come back; generate a fresh key.' },
  key_version_conflict: {
    status: 409,
    message: 'The key record changed meanwhile; fetch the current version and sign the next one again.',
  },

  // capacity
  source_capacity_exhausted: {
    status: 409,
    message: 'The tenant already has the maximum of 400 named sources; release one first.',
  },
  too_many_streams: {
    status: 429,
    message: 'This agent already has as many message streams open as the relay allows; close one first.',
  },

  deployment_untrusted: { status: 400, message: 'The deployment document does not verify against the trust bundle.' },
  deployment_mismatch: { status: 400, message: 'The deployment document or code is for another deployment.' },
  deployment_expired: { status: 400, message: 'The deployment document has expired; ask the operator to renew it.' },
  deployment_malformed: { status: 400, message: 'The deployment document or trust bundle is damaged.' },

  // messaging
  envelope_malformed: { status: 400, message: 'An envelope is malformed; seal it with the svc envelope format v1.' },
  envelope_binding_mismatch: {
    status: 400,
    message: 'An envelope names another deployment or tenant than this relay and your credentials.',
  },
  sender_mismatch: { status: 403, message: "An envelope's sender is not the agent of the access token." },
  unknown_recipient: { status: 404, message: 'A recipient is not an enrolled agent of your tenant.' },
  envelope_too_large: { status: 413, message: 'An envelope is larger than the relay accepts (256 KiB).' },
  message_id_conflict: {
    status: 409,
    message: 'This message id is already used by another sender for this recipient; use a fresh UUIDv7.',
  },
  unknown_message: { status: 404, message: 'No pending message with this id for you.' },

  // the local daemon and its clients (listed in daemon/src/client/api.ts)
  daemon_unavailable: { status: 503, message: 'No svc daemon answers; start it with `svc start`.' },
  daemon_already_running: { status: 409, message: 'A daemon already runs for this SVC_HOME.' },
  unknown_agent: { status: 404, message: 'No local agent by that name or number; see `svc agent list`.' },
  agent_required: { status: 400, message: 'Several local agents: choose one with --as or SVC_AGENT.' },
  unknown_deployment: {
    status: 404,
    message: 'No trusted deployment by that name; add it with `svc deployment fetch`.',
  },
  deployment_exists: { status: 409, message: 'A deployment by that name exists; remove it or choose another name.' },
  deployment_in_use: {
    status: 409,
    message: 'Local agents are registered on this deployment; deregister them first, then remove it.',
  },
  vault_locked: { status: 423, message: 'The file vault is locked: set SVC_VAULT_PASSPHRASE to its passphrase.' },
  home_not_writable: {
    status: 500,
    message:
      'A file or directory under SVC_HOME cannot be changed (its permissions, a read-only or full disk); fix it and retry.',
  },
  archive_unusable: {
    status: 500,
    message: "An agent's archive cannot be opened (written by a newer svc, or damaged); it was left as it is.",
  },
  peer_key_changed: {
    status: 409,
    message: "A peer's pinned key changed: check `svc keys status` and accept the new key to continue.",
  },
  envelope_rejected: { status: 422, message: 'An inbound envelope failed verification; it was not archived.' },
  not_supported_self_hosted: { status: 501, message: 'This command needs the hosted service.' },
  relay_unreachable: {
    status: 503,
    message: 'The relay cannot be reached; check the network or ask its operator, then retry.',
  },

  // local configuration (CLI/daemon/operator commands)
  config_invalid: { status: 400, message: 'The configuration is invalid.' },
  usage_error: {
    status: 400,
    message: 'The command line is invalid (an unknown command or option, a missing or invalid argument); see --help.',
  },

  // the operator's relay process (svc-relay serve, dev): failures of the host, not of a request
  dependency_missing: {
    status: 500,
    message:
      'A program the relay needs is not installed (nats-server); install it, or point the relay at one running elsewhere.',
  },
  listen_failed: {
    status: 500,
    message:
      'The relay cannot listen on its address (in use, or not allowed); free it or choose another with --listen or SVC_RELAY_LISTEN.',
  },

  // everyday behaviour (daemon and CLI: read, deregister)
  unknown_conversation: {
    status: 404,
    message: 'No conversation or peer by that id in the local archive; see `svc inbox` or `svc conv list`.',
  },

  // relay authorization of administrators
  insufficient_role: {
    status: 403,
    message: 'Only an admin or automation token may mint enrollment grants; ask an administrator.',
  },

  // daemon: what it takes from a relay it does not trust
  peer_directory_mismatch: {
    status: 502,
    message:
      "The relay's key directory answered for another agent, deployment or tenant; nothing was sent. Ask the relay's operator to check it.",
  },
  enrollment_answer_mismatch: {
    status: 502,
    message:
      "The relay's enrollment answer names another agent, tenant, deployment or capabilities than its code; nothing was saved. Ask the relay's operator to check it.",
  },
  peer_key_invalid: {
    status: 502,
    message:
      "The relay served a peer key that cannot be used safely (small-order, malformed, or a new key its record is not signed by); nothing was sent. Ask the relay's operator to check it.",
  },
  peer_key_unsigned: {
    status: 409,
    message:
      'The relay serves only an unsigned key record for this peer (enrolled before key records were signed); nothing was sent. Ask its owner to run `svc keys backfill`.',
  },
  own_key_mismatch: {
    status: 502,
    message:
      "The relay publishes keys for this agent that its vault did not sign (another signing key, or a signature that does not verify); nothing was uploaded. Ask the relay's operator to check it.",
  },
  deployment_stale: {
    status: 409,
    message:
      'This deployment document is older than the one already trusted; fetch the current one from the relay or its operator.',
  },
  relay_answer_too_large: {
    status: 502,
    message:
      'The relay answered with more data than any valid answer holds; it was not read. Ask its operator to check it.',
  },
  conversation_mismatch: {
    status: 400,
    message:
      'That conversation id is not the direct conversation with that recipient; omit it or use dm:<number>:<number> of you both.',
  },

  // relay request limits, quotas and HTTP framing
  uri_too_long: { status: 414, message: 'The request path or one of its parameters is too long.' },
  headers_too_large: { status: 431, message: 'The request headers are larger than the relay accepts.' },
  request_timeout: { status: 408, message: 'The request was not received in time; send it again.' },
  recipient_inbox_full: {
    status: 507,
    message: "The recipient's pending inbox is full; retry after the recipient has read and acknowledged messages.",
  },
  tenant_storage_full: {
    status: 507,
    message: "The tenant's message storage is full; retry later, and the operator should raise the tenant's quota.",
  },
  agent_blob_quota_full: {
    status: 507,
    message:
      'You hold as many attachment bytes on the relay as one agent may; retry once your recipients have fetched and acknowledged earlier attachments.',
  },

  // dashboard and desktop
  dashboard_host_not_loopback: {
    status: 400,
    message: 'The dashboard listens on loopback only: use 127.0.0.1, ::1 or localhost as its host.',
  },
  dashboard_port_in_use: {
    status: 409,
    message: 'The dashboard port is taken by another program: choose another with --port or SVC_DASHBOARD_PORT.',
  },
  dashboard_forbidden: {
    status: 403,
    message:
      'Refused: the request does not come from the dashboard page on its loopback address. Open it with `svc dashboard`.',
  },
  dashboard_session_required: {
    status: 401,
    message: 'This browser is not signed in to the dashboard: open the link that `svc dashboard` prints.',
  },
  desktop_no_browser: {
    status: 503,
    message: 'Neither Electron nor Chromium was found: install chromium (apt-get install chromium) or set SVC_BROWSER.',
  },

  // coding-assistant integrations (svc claude …, svc codex setup)
  integration_config_invalid: {
    status: 422,
    message: 'The assistant settings file cannot be parsed; fix it by hand (nothing was changed), then retry.',
  },
  integration_not_installed: {
    status: 404,
    message: 'The svc status line is not installed here; nothing to remove.',
  },
  binary_not_found: {
    status: 404,
    message: 'No `svc` on PATH; pass the path of the svc binary with --binary.',
  },

  // conversations: groups and broadcasts (client-side rosters), context notes
  not_a_member: {
    status: 403,
    message: 'You are not (or no longer) a member of that conversation; ask its creator to invite you.',
  },
  not_allowed_to_post: {
    status: 403,
    message: 'Your role in that conversation is read-only (observer); ask its creator to invite you as a member.',
  },
  not_conversation_creator: {
    status: 403,
    message: 'Only the creator of a group or broadcast invites to it; ask the creator.',
  },
  context_exists: {
    status: 409,
    message: 'A context file for that conversation or peer exists; use `svc context edit` or `append`.',
  },
  blob_too_large: {
    status: 413,
    message: 'The attachment is larger than the relay accepts (SVC_RELAY_BLOB_MAX_BYTES); send a smaller file.',
  },
  unknown_blob: {
    status: 404,
    message: 'No attachment by that id for you (never uploaded, already deleted, or expired).',
  },
  attachment_digest_mismatch: {
    status: 502,
    message: 'The attachment the relay served is not the one the sender signed for; it was not saved.',
  },
  not_an_attachment: { status: 400, message: 'That message carries no attachment.' },
  unknown_context: {
    status: 404,
    message: 'No context file for that conversation or peer; create one with `svc context save`.',
  },

  // the local stack: leaf uplinks and named sources (issue 17)
  source_claimed: {
    status: 409,
    message: 'Another edge machine already streams this agent; release it there first.',
  },
  invalid_source_claim_proof: {
    status: 403,
    message:
      "proof must be the agent's own Ed25519 signature over the svc.source-claim/v1 statement naming this edge, issued within 5 minutes; an edge claims only agents whose keys it holds.",
  },
  edge_source_capacity_exhausted: {
    status: 409,
    message: 'This edge machine already streams the maximum of 64 named sources; release one first.',
  },
  consumer_ceiling_reached: {
    status: 409,
    message: "The tenant account's consumer ceiling (1,024) is reached; release a named source first.",
  },
  local_stack_running: {
    status: 409,
    message: 'The local nats-server already runs; `svc stop --local` first to start it with other settings.',
  },
  local_stack_failed: {
    status: 500,
    message:
      'The local nats-server did not start; check that nats-server is installed (apt-get install nats-server) and the ports are free.',
  },
  uplink_identity_required: {
    status: 409,
    message:
      'The leaf uplink needs one local identity enrolled with the nats-relay capability (name it with --as), or use --local-only.',
  },
  process_not_owned: {
    status: 409,
    message: 'The process named by the pid file cannot be proven to be the one svc started; nothing was stopped.',
  },
  leaf_unavailable: {
    status: 503,
    message:
      'This relay has no leaf node listener; the operator sets SVC_RELAY_LEAF_LISTEN (and SVC_RELAY_LEAF_ADVERTISE).',
  },
  local_delivery_failed: {
    status: 503,
    message:
      'The local nats-server did not hand the message to the local agent; check `svc start` status and send again.',
  },
  local_agent_unreachable: {
    status: 409,
    message:
      'A --local agent reaches only the other agents of this machine, through the local nats-server (`svc start --local-only`).',
  },

  // the relay's data dir: one relay at a time when it runs the nats-server itself
  data_dir_in_use: {
    status: 409,
    message: 'Another relay runs on this data dir; stop it first, or give this one another data dir.',
  },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOG;

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CATALOG, value);
}

/** A failure with a stable code; mapped once at the edge (HTTP, socket, CLI). */
export class SvcError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Detail for logs only (never sent to a client of an authenticating route). */
  readonly detail: string | undefined;

  constructor(code: ErrorCode, message?: string, options?: { detail?: string; cause?: unknown }) {
    super(message ?? ERROR_CATALOG[code].message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SvcError';
    this.code = code;
    this.status = ERROR_CATALOG[code].status;
    this.detail = options?.detail;
  }

  toJSON(): { error: ErrorCode; message: string } {
    return { error: this.code, message: this.message };
  }
}

/** The JSON body of every error answer. */
export interface ErrorBody {
  error: string;
  message: string;
}
