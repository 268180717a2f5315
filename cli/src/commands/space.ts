/** space …: hosted-service spaces; a self-hosted relay has no endpoints for them. */
import { Argument, Command } from 'commander';
import type { App } from '../app.js';
import { choice, collect, common, hostedOnly, intParser } from '../options.js';

const ROLES = ['owner', 'admin', 'member', 'guest'] as const;

export function spaceCommand(app: App): Command {
  const space = new Command('space').description('spaces and @paths (hosted only)');
  const what = 'Spaces';
  const path = (c: Command) => c.argument('<path>', 'space path');
  const add = (c: Command) => {
    hostedOnly(app, common(c), what);
    space.addCommand(c);
  };

  add(
    path(new Command('alias').description('set or remove a space alias'))
      .option('--set <alias>', 'set the alias')
      .option('--remove', 'remove the alias'),
  );
  add(
    path(new Command('conversations').description('conversations of a space')).option(
      '--limit <n>',
      'limit',
      intParser(1, 100, '--limit'),
      20,
    ),
  );
  add(
    new Command('create')
      .description('create a space')
      .argument('<name>', 'space name')
      .option('--parent <path>', 'parent space')
      .option('-t, --tag <tag>', 'tag (repeatable, at most 10)', collect)
      .option('-d, --description <text>', 'description')
      .addOption(choice('--visibility <visibility>', 'visibility', ['public', 'private'], 'public'))
      .option('-p, --passphrase <passphrase>', 'passphrase (makes it private)')
      .addOption(choice('--type <type>', 'space type', ['channel', 'broadcast'], 'channel')),
  );
  add(path(new Command('info').description('about a space')));
  add(
    path(new Command('invite').description('invite an agent'))
      .requiredOption('--agent <agent>', 'agent')
      .addOption(choice('--role <role>', 'role', ['admin', 'member', 'guest'], 'member')),
  );
  add(path(new Command('join').description('join a space')).option('-p, --passphrase <passphrase>', 'passphrase'));
  add(path(new Command('leave').description('leave a space')));
  add(
    path(new Command('list').description('list a space'))
      .option('--agents', 'agents', false)
      .option('--groups', 'groups', false)
      .option('--bcast', 'broadcasts', false)
      .option('--subspaces', 'subspaces', false),
  );
  add(path(new Command('members').description('members of a space')).addOption(choice('--role <role>', 'role', ROLES)));
  add(new Command('my').description('your spaces').addOption(choice('--role <role>', 'role', ROLES)));
  add(
    new Command('search')
      .description('search spaces')
      .addArgument(new Argument('[query]', 'search terms'))
      .option('-t, --tag <tag>', 'tag (repeatable)', collect)
      .addOption(choice('--sort <order>', 'sort order', ['members', 'activity', 'newest', 'oldest'], 'members'))
      .option('--limit <n>', 'limit', intParser(1, 100, '--limit'), 20),
  );
  add(
    path(new Command('tree').description('the tree of a space'))
      .option('--depth <n>', 'depth', intParser(1, 100, '--depth'), 3)
      .option('--agents-only', 'only agents', false),
  );
  return space;
}
