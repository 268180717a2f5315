/** cache clear | stats: the local cache (not built yet). */
import { Command } from 'commander';
import type { App } from '../app.js';
import { notBuilt, withJson, yes } from '../options.js';

export function cacheCommand(app: App): Command {
  const cache = new Command('cache').description('the local cache (not built yet)');
  const clear = yes(withJson(new Command('clear').description('empty the local cache')));
  const stats = withJson(new Command('stats').description('size of the local cache'));
  notBuilt(app, clear, 'svc cache clear');
  notBuilt(app, stats, 'svc cache stats');
  return cache.addCommand(clear).addCommand(stats);
}
