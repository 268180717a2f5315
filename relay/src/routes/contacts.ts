/** The caller's contacts: other agents of its tenant, with an optional alias and notes. */
import { Type } from '@sinclair/typebox';
import { Contact, ContactList, ContactNumberParams, ContactRequest, SvcError } from '@svc/shared';
import type { RoutePlugin } from '../http/scopes.js';
import type { ContactRow } from '../ledger/contacts.js';
import { cleanText } from '../services/profiles.js';

const view = (c: ContactRow) => ({
  agent_id: c.agent_id,
  agent_number: c.agent_number,
  display_name: c.display_name,
  alias: c.alias,
  notes: c.notes,
  added_at: new Date(c.created_at).toISOString(),
  updated_at: new Date(c.updated_at).toISOString(),
});

export const contactRoutes: RoutePlugin = async (app, { ctx }) => {
  app.post(
    '/api/v1/contacts',
    {
      schema: {
        summary: 'Add an agent of the same tenant to the contacts, or update its alias and notes',
        description:
          'Omitted fields keep their value; null or an empty string clears them. 201 when added, 200 when updated.',
        body: ContactRequest,
        response: { 200: Contact, 201: Contact },
      },
    },
    async (request, reply) => {
      const { row } = request.agent;
      const number = request.body.agent_number;
      const target = await ctx.stores.profiles.findActiveAgent(row.tenant_id, number);
      if (!target || target.agent_number !== number) {
        throw new SvcError('not_found', `No agent number ${JSON.stringify(number)} in your tenant.`);
      }
      // like blocking or muting: a contact is another agent
      if (target.agent_id === row.agent_id)
        throw new SvcError('cannot_target_self', 'An agent cannot add itself as a contact.');
      const { contact, created } = await ctx.stores.contacts.upsert(
        row.tenant_id,
        row.agent_id,
        target,
        { alias: cleanText(request.body.alias), notes: cleanText(request.body.notes) },
        ctx.now(),
      );
      return reply.status(created ? 201 : 200).send(view(contact));
    },
  );

  app.get(
    '/api/v1/contacts',
    {
      schema: {
        summary: "The caller's contacts, oldest first",
        response: { 200: ContactList },
      },
    },
    async (request) => {
      const { row } = request.agent;
      return { contacts: (await ctx.stores.contacts.list(row.tenant_id, row.agent_id)).map(view) };
    },
  );

  app.delete(
    '/api/v1/contacts/:contact_number',
    {
      schema: {
        summary: 'Remove a contact by its agent number',
        params: ContactNumberParams,
        response: { 204: Type.Null() },
      },
    },
    async (request, reply) => {
      const { row } = request.agent;
      const ref = request.params.contact_number;
      if (!(await ctx.stores.contacts.remove(row.tenant_id, row.agent_id, ref))) {
        throw new SvcError('not_found', `${JSON.stringify(ref)} is not one of your contacts.`);
      }
      return reply.status(204).send(null);
    },
  );
};
