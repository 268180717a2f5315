/** context …: local notes per conversation or peer under $SVC_HOME/context (not built yet). */
import { Command } from 'commander';
import type { App } from '../app.js';
import { choice, common, notBuilt } from '../options.js';

const target = (c: Command) =>
  c
    .option('--conversation-id <id>', 'conversation (or --peer)')
    .option('--peer <agent_number>', 'peer (or --conversation-id)');
const body = (c: Command) =>
  c.option('-m, --message <text>', 'body (default: standard input)').option('-s, --summary <text>', 'summary');

export function contextCommand(app: App): Command {
  const context = new Command('context').description('local context notes per conversation or peer');
  const add = (c: Command) => {
    notBuilt(app, common(c), `svc context ${c.name()}`);
    context.addCommand(c);
  };
  add(body(target(new Command('append').description('append to a context file'))));
  add(target(new Command('delete').description('delete a context file (no confirmation)')));
  add(body(target(new Command('edit').description('replace the whole body of a context file'))));
  add(
    new Command('list')
      .description('context files')
      .addOption(choice('--type <type>', 'kind', ['conversation', 'peer'])),
  );
  add(target(new Command('load').description('print a context file (nothing if none)')));
  add(
    body(
      target(new Command('save').description('create a context file (errors if it exists)')).option(
        '--label <agent_number>',
        'alias of --peer',
      ),
    ).addOption(choice('--conversation-type <type>', 'with --conversation-id only', ['direct', 'group', 'broadcast'])),
  );
  return context;
}
