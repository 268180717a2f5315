/** contacts add | list | remove (the daemon's contact operations; the relay keeps the list). */
import type { ContactRequest } from '@svc/shared';
import { Command } from 'commander';
import type { App } from '../app.js';
import { action, common } from '../options.js';
import { table } from '../output.js';

export function contactsCommand(app: App): Command {
  const contacts = new Command('contacts').description('your contacts: agents of your tenant with an alias and notes');

  const add = common(
    new Command('add')
      .description('add a contact, or update its alias and notes')
      .argument('<agent_number>', 'agent number')
      .option('--alias <alias>', 'your name for the agent')
      .option('--notes <text>', 'notes'),
  );
  action(app, add, async (run, number?: string) => {
    const o = run.opts<{ alias?: string; notes?: string }>();
    const body: ContactRequest = { agent_number: number! };
    if (o.alias !== undefined) body.alias = o.alias;
    if (o.notes !== undefined) body.notes = o.notes;
    const { link, agent } = await run.asAgent();
    const { created, contact } = await link.saveContact(agent, body);
    run.print(contact, () => `${created ? 'Added' : 'Updated'} contact ${contact.agent_number}.\n`);
  });

  const list = common(new Command('list').description('your contacts, oldest first'));
  action(app, list, async (run) => {
    const { link, agent } = await run.asAgent();
    const body = await link.contacts(agent);
    run.print(body.contacts, () =>
      table(
        [
          ['agent number', 'agent_number'],
          ['alias', 'alias'],
          ['display name', 'display_name'],
          ['notes', 'notes'],
          ['added', 'added_at'],
        ],
        body.contacts,
        'No contacts.',
      ),
    );
  });

  const remove = common(
    new Command('remove').description('remove a contact').argument('<agent_number>', 'agent number'),
  );
  action(app, remove, async (run, number?: string) => {
    const { link, agent } = await run.asAgent();
    await link.removeContact(agent, number!);
    run.print({ agent_number: number, removed: true }, () => `Removed contact ${number}.\n`);
  });

  return contacts.addCommand(add).addCommand(list).addCommand(remove);
}
