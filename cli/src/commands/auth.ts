/** auth token (wired) and the hosted-only owner sign-in commands. */
import { Command } from 'commander';
import type { App } from '../app.js';
import { action, common, hostedOnly, numberParser, withJson } from '../options.js';

export function authCommand(app: App): Command {
  const auth = new Command('auth').description('access tokens (owner sign-in is hosted only)');
  const what = 'Owner sign-in';
  const deployment = (c: Command) => c.option('--deployment <name>', 'deployment');

  const login = deployment(
    new Command('login')
      .description('sign in as an owner (hosted only; same as account add)')
      .option('--poll-interval <seconds>', 'seconds between polls', numberParser('--poll-interval'), 5.0)
      .option(
        '--timeout <seconds>',
        'give up after this many seconds (default: until the code expires)',
        numberParser('--timeout'),
      ),
  ).option('--no-sign-out', 'keep the current account signed in');
  hostedOnly(app, login, what);

  const logout = deployment(new Command('logout').description('sign out (hosted only)'));
  hostedOnly(app, logout, what);

  const mint = deployment(
    new Command('mint-token')
      .description('mint a durable owner token (hosted only)')
      .option('--name <name>', 'token name (default: hostname)')
      .option('--save', 'save the token (default)', true)
      .option('--no-save', 'only print the token'),
  );
  hostedOnly(app, mint, 'Owner tokens');

  const token = common(new Command('token').description('exchange the API key for an access JWT and print it'));
  action(app, token, async (run) => {
    const link = await run.link();
    const t = await link.token(await run.agent(link));
    run.print(t, () => `${t.access_token}\n`);
  });

  const tokens = new Command('tokens').description('owner tokens (hosted only)');
  const tokensList = deployment(withJson(new Command('list').description('owner tokens, metadata only')));
  hostedOnly(app, tokensList, 'Owner tokens');
  const revoke = deployment(
    new Command('revoke').description('revoke an owner token').argument('<pat_id>', 'token id'),
  );
  hostedOnly(app, revoke, 'Owner tokens');
  tokens.addCommand(tokensList).addCommand(revoke);

  return auth.addCommand(login).addCommand(logout).addCommand(mint).addCommand(token).addCommand(tokens);
}
