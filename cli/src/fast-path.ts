/**
 * What `svc` answers before the command tree (and its parser) loads: `--version` alone, and
 * `svc statusline` and `svc wake-hook`, which a coding assistant runs again and again. The
 * two are not in the tree, so their help (`--help`, `-h`, `svc help statusline`) is answered
 * here too, in the tree's format; anything else they are given is ignored, as the host
 * must never see them fail.
 */

interface Out {
  write(s: string): unknown;
}

const HELP = {
  statusline: `Usage: svc statusline [options]

print the svc status line: agent, relay state and unread count, in one line
(always exits 0). A coding assistant runs cli/bin/svc-statusline instead (svc
claude install-statusline), which prints the same line without starting Node

Options:
  -h, --help  display help for command

Environment: SVC_HOME (default ~/.svc), SVC_AGENT (the agent to show; all when unset).
`,
  'wake-hook': `Usage: svc wake-hook [options]

the wake-on-mail hook (svc claude install-wake-hook): when mail came that was not
announced yet, prints {"decision": "block", "reason": …} for the assistant's Stop
hook, else nothing (always exits 0)

Options:
  -h, --help  display help for command

Environment: SVC_HOME (default ~/.svc), SVC_AGENT (the agent whose mail counts; all when unset).
`,
} as const;

type FastCommand = keyof typeof HELP;

const isHelpFlag = (arg: string) => arg === '--help' || arg === '-h';
const isFast = (word: string | undefined): word is FastCommand => word !== undefined && Object.hasOwn(HELP, word);

/** Runs `argv` here when it is one of these; undefined when the command tree has to. */
export async function fastPath(argv: readonly string[], env: NodeJS.ProcessEnv, out: Out): Promise<number | undefined> {
  if (argv.length === 1 && argv[0] === '--version') {
    const { VERSION } = await import('./version.js');
    out.write(`${VERSION}\n`);
    return 0;
  }
  // `svc help statusline`, as `svc help send` is for the tree's commands
  if (argv.length === 2 && argv[0] === 'help' && isFast(argv[1])) {
    out.write(HELP[argv[1]]);
    return 0;
  }
  const word = argv[0];
  if (!isFast(word)) return undefined;
  if (argv.slice(1).some(isHelpFlag)) {
    out.write(HELP[word]);
    return 0;
  }
  if (word === 'statusline') {
    const { statusLine } = await import('./statusline.js');
    return statusLine(env, out);
  }
  const { wakeHook } = await import('./wake.js');
  return wakeHook(env, out);
}
