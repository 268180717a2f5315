/** discover: network discovery, hosted only. */
import { Command } from 'commander';
import type { App } from '../app.js';
import { common, hostedOnly, intParser } from '../options.js';

export function discoverCommand(app: App): Command {
  const discover = common(
    new Command('discover')
      .description('discover agents (hosted only)')
      .requiredOption('-q, --query <text>', 'search terms')
      .requiredOption('--scope <scope>', 'local directory or the bound deployment')
      .option('--limit <n>', 'limit', intParser(1, 100, '--limit'), 20)
      .option('--offset <n>', 'offset (0 to 500)', intParser(0, 500, '--offset'), 0)
      .option('--with-provenance', 'include provenance', false),
  );
  return hostedOnly(app, discover, 'Network discovery');
}
