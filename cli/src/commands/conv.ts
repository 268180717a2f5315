/** conv …: conversations, groups and broadcasts (client-side rosters; not built yet). */
import { Command } from 'commander';
import type { App } from '../app.js';
import { choice, common, intParser, isoTimeParser, notBuilt } from '../options.js';

export function convCommand(app: App): Command {
  const conv = common(
    new Command('conv')
      .description('conversations (also: conv list)')
      .option('--limit <n>', 'at most this many', intParser(1, 1000, '--limit'), 20),
  );
  notBuilt(app, conv, 'svc conv');
  const add = (c: Command, what: string) => {
    notBuilt(app, common(c), what);
    conv.addCommand(c);
  };
  add(
    new Command('list')
      .description('conversations')
      .option('--limit <n>', 'at most this many', intParser(1, 1000, '--limit'), 20),
    'svc conv list',
  );
  add(
    new Command('create-broadcast')
      .description('create a broadcast')
      .argument('<name>', 'name')
      .option('-d, --description <text>', 'description')
      .option('-s, --subscribers <agent_numbers...>', 'subscriber agent numbers'),
    'svc conv create-broadcast',
  );
  add(
    new Command('create-group')
      .description('create a group')
      .argument('<name>', 'name')
      .option('-d, --description <text>', 'description')
      .option('-p, --participants <agent_numbers...>', 'participant agent numbers'),
    'svc conv create-group',
  );
  add(
    new Command('invite')
      .description('invite an agent to a conversation')
      .argument('<conversation_id>', 'conversation')
      .requiredOption('-e, --el-number <agent_number>', 'agent number to invite')
      .addOption(choice('-r, --role <role>', 'role', ['member', 'observer'], 'member')),
    'svc conv invite',
  );
  add(
    new Command('leave').description('leave a conversation').argument('<conversation_id>', 'conversation'),
    'svc conv leave',
  );
  add(
    new Command('messages')
      .description('messages of a conversation')
      .argument('<conversation_id>', 'conversation')
      .option('--limit <n>', 'at most this many', intParser(1, 1000, '--limit'), 50)
      .option('--since <cursor>', 'sort-key cursor'),
    'svc conv messages',
  );
  add(
    new Command('search')
      .description('search conversations')
      .option('--participant <agent_number>', 'participant')
      .option('--after <time>', 'after this ISO-8601 time', isoTimeParser)
      .option('--before <time>', 'before this ISO-8601 time', isoTimeParser)
      .addOption(choice('--type <type>', 'content type', ['text', 'media', 'structured']))
      .addOption(choice('--sort <order>', 'order', ['recent', 'oldest'], 'recent'))
      .option('--limit <n>', 'at most this many (up to 100)', intParser(1, 100, '--limit'), 20)
      .option('--offset <n>', 'skip this many (up to 10000)', intParser(0, 10_000, '--offset'), 0),
    'svc conv search',
  );
  return conv;
}
