/** config get | set | list: `$SVC_HOME/config.json` profiles, without the daemon. */
import { Command } from 'commander';
import type { App } from '../app.js';
import {
  CONFIG_KEYS,
  checkConfigKey,
  checkProfileName,
  DEFAULT_PROFILE,
  maskSetting,
  readConfig,
  setSetting,
} from '../config-file.js';
import { CliError } from '../errors.js';
import { action, withJson } from '../options.js';
import { table } from '../output.js';

const profileOption = (cmd: Command) => cmd.option('--profile <name>', `profile (default: ${DEFAULT_PROFILE})`);

export function configCommand(app: App): Command {
  const config = new Command('config').description('local settings in $SVC_HOME/config.json, by profile').addHelpText(
    'after',
    `\nKeys:\n${Object.entries(CONFIG_KEYS)
      .map(([k, v]) => `  ${k.padEnd(12)} ${v}`)
      .join('\n')}\n`,
  );

  const get = profileOption(new Command('get').description('print a setting').argument('<key>', 'setting key'));
  action(app, get, async (run, key?: string) => {
    const k = checkConfigKey(key!);
    const profile = checkProfileName(run.opts<{ profile?: string }>().profile ?? DEFAULT_PROFILE);
    const value = (await readConfig(app.home)).profiles[profile]?.[k];
    if (value === undefined) {
      throw new CliError('not_found', `${k} is not set in profile ${profile}; set it with svc config set ${k} VALUE.`);
    }
    run.out(`${value}\n`);
  });

  const set = profileOption(
    new Command('set')
      .description('store a setting (keys such as api-url, api-key)')
      .argument('<key>', 'setting key')
      .argument('<value>', 'value'),
  );
  action(app, set, async (run, key?: string, value?: string) => {
    const k = checkConfigKey(key!);
    const profile = checkProfileName(run.opts<{ profile?: string }>().profile ?? DEFAULT_PROFILE);
    await setSetting(app.home, profile, k, value!);
    run.info(`wrote ${app.home}/config.json`);
    run.out(`Set ${k} in profile ${profile}.\n`);
  });

  const list = withJson(profileOption(new Command('list').description('settings of a profile (secrets masked)')));
  action(app, list, async (run) => {
    const profile = checkProfileName(run.opts<{ profile?: string }>().profile ?? DEFAULT_PROFILE);
    const values = (await readConfig(app.home)).profiles[profile] ?? {};
    const rows = Object.entries(values).map(([key, value]) => ({ key, value: maskSetting(key, value) }));
    run.print({ profile, settings: Object.fromEntries(rows.map((r) => [r.key, r.value])) }, () =>
      table(
        [
          ['key', 'key'],
          ['value', 'value'],
        ],
        rows,
        `No settings in profile ${profile}.`,
      ),
    );
  });

  return config.addCommand(get).addCommand(list).addCommand(set);
}
