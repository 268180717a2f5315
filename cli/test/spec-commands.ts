/**
 * The client command surface of the specification (docs/spec/relay-spec.md, "Client command
 * surface"), transcribed table by table: command path → its parameters. Flags are
 * written as in the spec (long and short forms); positionals in UPPER_CASE; '+common'
 * stands for --as, --json, -v/--verbose. `<host_a>`/`<host_b>` use this build's names.
 */
import { HOST_A, HOST_B } from '../src/commands/integration.js';

export const COMMON = ['--as', '--json', '-v', '--verbose'];

export const GLOBAL_OPTIONS = ['--no-autostart', '--version', '--install-completion', '--show-completion'];

type Spec = Record<string, string[]>;

export const CORE: Spec = {
  inbox: ['+common', '--source'],
  init: ['--name', '--description', '--skip-start', '--deployment'],
  mcp: [],
  read: ['CONVERSATION_ID', '--last', '--since', '+common'],
  register: [
    '--name',
    '--display-name',
    '--description',
    '--discoverable',
    '--no-discoverable',
    '--local',
    '--deployment',
    '--enrollment-grant',
    '--tenant',
    '--agent-id',
    '--json',
    '-v',
  ],
  reply: ['MESSAGE_ID', 'CONTENT', '--to', '--stdin', '--content-type', '--file', '--attach', '+common'],
  send: [
    'TO_NUMBER',
    'CONTENT',
    '--to',
    '--message',
    '-m',
    '--content-type',
    '--conversation-id',
    '--stdin',
    '--file',
    '--attach',
    '+common',
  ],
  watch: ['--as', '--json'],
};

export const IDENTITY: Spec = {
  account: ['--json'],
  'account add': ['--no-sign-out'],
  'account billing': [],
  'account cancel': ['--yes', '-y'],
  'account list': ['--json'],
  'account plan': ['QUERY', '--json'],
  'account remove': ['QUERY', '--yes', '-y'],
  'account switch': ['QUERY'],
  'account upgrade': ['TIER', '--yes', '-y'],
  dashboard: ['--port', '--host', '--no-browser', '-v'],
  deregister: ['AGENT_NAME', '--yes', '-y', '--as', '--json', '-v'],
  doctor: ['--api-url', '--as', '--json', '-v', '--full-integrity'],
  star: ['--repo'],
  start: ['--local-only', '--port', '--monitor-port', '--listen', '--background', '-b', '--as', '--json', '-v'],
  stop: ['--local'],
  sync: ['--as', '--json', '-v'],
  tui: [],
  whoami: ['--api-url', '--api-key', '--as', '--json', '-v'],
};

export const MANAGEMENT: Spec = {
  'abuse block': ['AGENT_ID', '+common'],
  'abuse unblock': ['AGENT_ID', '+common'],
  'abuse mute': ['AGENT_ID', '+common'],
  'abuse unmute': ['AGENT_ID', '+common'],
  'abuse blocked': ['+common'],
  'abuse muted': ['+common'],
  'abuse report': ['AGENT_ID', '--reason', '+common'],
  'agent heartbeat': ['+common'],
  'agent info': ['AGENT_ID', '+common'],
  'agent list': ['--all', '--json', '-v'],
  'agent prune': ['--dry-run', '+common'],
  'agent recover': ['--name', '--number', '--api-key', '--api-url', '--json', '-v'],
  'agent status': ['PRESENCE', '+common'],
  'agent update': ['--name', '--description', '--status', '--location', '--timezone', '+common'],
  'agent visibility': ['LEVEL', '+common'],
  'cache clear': ['--yes', '-y', '--json'],
  'cache stats': ['--json'],
  'config get': ['KEY', '--profile'],
  'config list': ['--profile'],
  'config set': ['KEY', 'VALUE', '--profile'],
  'contacts add': ['AGENT_NUMBER', '--alias', '--notes', '+common'],
  'contacts list': ['+common'],
  'contacts remove': ['AGENT_NUMBER', '+common'],
  'context append': ['--conversation-id', '--peer', '--message', '-m', '--summary', '-s', '+common'],
  'context edit': ['--conversation-id', '--peer', '--message', '-m', '--summary', '-s', '+common'],
  'context delete': ['--conversation-id', '--peer', '+common'],
  'context load': ['--conversation-id', '--peer', '+common'],
  'context list': ['--type', '+common'],
  'context save': [
    '--conversation-id',
    '--peer',
    '--label',
    '--message',
    '-m',
    '--summary',
    '-s',
    '--conversation-type',
    '+common',
  ],
  conv: ['--limit', '+common'],
  'conv list': ['--limit', '+common'],
  'conv create-broadcast': ['NAME', '--description', '-d', '--subscribers', '-s', '+common'],
  'conv create-group': ['NAME', '--description', '-d', '--participants', '-p', '+common'],
  'conv invite': ['CONVERSATION_ID', '--el-number', '-e', '--role', '-r', '+common'],
  'conv leave': ['CONVERSATION_ID', '+common'],
  'conv messages': ['CONVERSATION_ID', '--limit', '--since', '+common'],
  'conv search': ['--participant', '--after', '--before', '--type', '--sort', '--limit', '--offset', '+common'],
  discover: ['--query', '-q', '--scope', '--limit', '--offset', '--with-provenance', '+common'],
  'keys backfill': ['--dry-run', '--json', '--as', '-v'],
  'keys generate': ['--number', '-n', '--force', '-f', '--yes', '-y', '--json', '--as', '-v'],
  'keys status': ['--number', '-n', '--json', '--as', '-v'],
  'keys upload-signing': ['+common'],
  'msg ack': ['MESSAGE_ID', '+common'],
  'msg check': ['--wait', '--stream', '--ack', '+common'],
  'msg search': ['QUERY', '--limit', '+common'],
  'space alias': ['PATH', '--set', '--remove', '+common'],
  'space conversations': ['PATH', '--limit', '+common'],
  'space create': [
    'NAME',
    '--parent',
    '--tag',
    '-t',
    '--description',
    '-d',
    '--visibility',
    '--passphrase',
    '-p',
    '--type',
    '+common',
  ],
  'space info': ['PATH', '+common'],
  'space leave': ['PATH', '+common'],
  'space invite': ['PATH', '--agent', '--role', '+common'],
  'space join': ['PATH', '--passphrase', '-p', '+common'],
  'space list': ['PATH', '--agents', '--groups', '--bcast', '--subspaces', '+common'],
  'space members': ['PATH', '--role', '+common'],
  'space my': ['--role', '+common'],
  'space search': ['QUERY', '--tag', '-t', '--sort', '--limit', '+common'],
  'space tree': ['PATH', '--depth', '--agents-only', '+common'],
};

export const INTEGRATION: Spec = {
  [`${HOST_A} install-statusline`]: ['--binary'],
  [`${HOST_A} uninstall-statusline`]: [],
  [`${HOST_B} setup`]: ['--agent', '--migrate-legacy'],
};

export const ADVANCED: Spec = {
  'auth login': ['--poll-interval', '--timeout', '--deployment', '--no-sign-out'],
  'auth logout': ['--deployment'],
  'auth mint-token': ['--name', '--save', '--no-save', '--deployment'],
  'auth token': ['+common'],
  'auth tokens list': ['--json', '--deployment'],
  'auth tokens revoke': ['PAT_ID', '--deployment'],
  'deployment add': ['--document', '--trust', '--ca-bundle', '--name', '--json'],
  'deployment audit': ['--json'],
  'deployment diagnose': ['NAME_OR_ID', '--at', '--json'],
  'deployment fetch': ['--url', '--trust', '--ca-bundle', '--name', '--json'],
  'deployment inspect': ['NAME_OR_ID', '--json'],
  'deployment remove': ['NAME_OR_ID', '--json'],
  'deployment list': ['--json'],
  'deployment migrate': ['--agent', '--deployment', '--json'],
  'deployment renew': ['NAME_OR_ID', '--url', '--document', '--trust', '--ca-bundle', '--json'],
  'recover replay-consumers': ['--agent', '--yes', '-y'],
  'recover reset-consumers': ['--agent', '--yes', '-y'],
  'recover reset-db': ['--agent', '--yes', '-y'],
  'recover stale-test-vault': ['--confirm-digest', '--json'],
};

/** Every command of the specification with its parameters, '+common' expanded. */
export const SPEC_COMMANDS: Record<string, string[]> = Object.fromEntries(
  Object.entries({ ...CORE, ...IDENTITY, ...MANAGEMENT, ...INTEGRATION, ...ADVANCED }).map(([path, params]) => [
    path,
    params.flatMap((p) => (p === '+common' ? COMMON : [p])),
  ]),
);

/** Choices the specification lists (command path → option → values). */
export const SPEC_CHOICES: Record<string, Record<string, string[]>> = {
  reply: { '--content-type': ['text', 'structured', 'media'] },
  'agent visibility': { LEVEL: ['private', 'org', 'public'] },
  'conv invite': { '--role': ['member', 'observer'] },
  'conv search': { '--type': ['text', 'media', 'structured'], '--sort': ['recent', 'oldest'] },
  'context list': { '--type': ['conversation', 'peer'] },
  'context save': { '--conversation-type': ['direct', 'group', 'broadcast'] },
  'space create': { '--visibility': ['public', 'private'], '--type': ['channel', 'broadcast'] },
  'space invite': { '--role': ['admin', 'member', 'guest'] },
  'space members': { '--role': ['owner', 'admin', 'member', 'guest'] },
  'space my': { '--role': ['owner', 'admin', 'member', 'guest'] },
  'space search': { '--sort': ['members', 'activity', 'newest', 'oldest'] },
};

/** Defaults the specification lists that show in --help. */
export const SPEC_DEFAULTS: Record<string, Record<string, string>> = {
  send: { '--content-type': '"text"' },
  reply: { '--content-type': '"text"' },
  conv: { '--limit': '20' },
  'conv messages': { '--limit': '50' },
  'conv search': { '--sort': '"recent"', '--limit': '20', '--offset': '0' },
  'conv invite': { '--role': '"member"' },
  'msg search': { '--limit': '20' },
  'space create': { '--visibility': '"public"', '--type': '"channel"' },
  'space tree': { '--depth': '3' },
  'space search': { '--sort': '"members"', '--limit': '20' },
  'auth login': { '--poll-interval': '5' },
  discover: { '--limit': '20', '--offset': '0' },
};
