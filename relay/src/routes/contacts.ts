/** The caller's contacts: other agents of its tenant, with an optional alias and notes. */
import { Type } from '@sinclair/typebox';
import { Contact, ContactList, ContactNumberParams, ContactRequest, ErrorResponse, SvcError } from '@svc/shared';
import type { RelayContext } from '../context.js';
import { requireAgent } from '../http/auth-hooks.js';
import { findActiveAgent } from '../ledger/profiles.js';
import { type ContactRow, listContacts, removeContact, upsertContact } from '../ledger/social.js';
import { cleanText } from '../services/profiles.js';
import type { TypedApp } from './types.js';

const view = (c: ContactRow) => ({
  agent_id: c.agent_id,
  agent_number: c.agent_number,
  display_name: c.display_name,
  alias: c.alias,
  notes: c.notes,
  added_at: new Date(c.created_at).toISOString(),
  updated_at: new Date(c.updated_at).toISOString(),
});

export function contactRoutes(app: TypedApp, ctx: RelayContext): void {
  app.post(
    '/api/v1/contacts',
    {
      onRequest: requireAgent(ctx),
      schema: {
        summary: 'Add an agent of the same tenant to the contacts, or update its alias and notes',
        description:
          'Omitted fields keep their value; null or an empty string clears them. 201 when added, 200 when updated.',
        security: [{ accessToken: [] }],
        body: ContactRequest,
        response: { 200: Contact, 201: Contact, '4xx': ErrorResponse, '5xx': ErrorResponse },
      },
    },
    async (request, reply) => {
      const { row } = request.agent as NonNullable<typeof request.agent>;
      const number = request.body.agent_number;
      const target = findActiveAgent(ctx.ledger, row.tenant_id, number);
      if (!target || target.agent_number !== number) {
        throw new SvcError('not_found', `No agent number ${JSON.stringify(number)} in your tenant.`);
      }
      // like blocking or muting: a contact is another agent
      if (target.agent_id === row.agent_id)
        throw new SvcError('cannot_target_self', 'An agent cannot add itself as a contact.');
      const { contact, created } = upsertContact(
        ctx.ledger,
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
      onRequest: requireAgent(ctx),
      schema: {
        summary: "The caller's contacts, oldest first",
        security: [{ accessToken: [] }],
        response: { 200: ContactList, '4xx': ErrorResponse, '5xx': ErrorResponse },
      },
    },
    async (request) => {
      const { row } = request.agent as NonNullable<typeof request.agent>;
      return { contacts: listContacts(ctx.ledger, row.tenant_id, row.agent_id).map(view) };
    },
  );

  app.delete(
    '/api/v1/contacts/:contact_number',
    {
      onRequest: requireAgent(ctx),
      schema: {
        summary: 'Remove a contact by its agent number',
        security: [{ accessToken: [] }],
        params: ContactNumberParams,
        response: { 204: Type.Null(), '4xx': ErrorResponse, '5xx': ErrorResponse },
      },
    },
    async (request, reply) => {
      const { row } = request.agent as NonNullable<typeof request.agent>;
      const ref = request.params.contact_number;
      if (!removeContact(ctx.ledger, row.tenant_id, row.agent_id, ref)) {
        throw new SvcError('not_found', `${JSON.stringify(ref)} is not one of your contacts.`);
      }
      return reply.status(204).send(null);
    },
  );
}
