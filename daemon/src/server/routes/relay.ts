/**
 * The agent on its relay: profile, presence, directory, block/mute, reports, contacts.
 * The daemon builds the relay paths and adds the access JWT; a relay refusal answers with
 * the relay's code and message. There is no generic relay proxy: a client asks for what it
 * means by name (tests that hand the relay something hand-made use the agent's token).
 */
import type { Contact, RelationEntry } from '@svc/shared';
import { type AgentRelation, DAEMON_API as API } from '../../client/api.js';
import type { DaemonContext } from '../../context.js';
import { toRelayError } from '../../relay/http.js';
import type { AgentSession } from '../../session/session.js';
import { type DaemonApp, route } from './route.js';

const seg = encodeURIComponent;

export function relayRoutes(app: DaemonApp, ctx: DaemonContext): void {
  const agent = (request: { params: { agent: string } }) => ctx.agents.resolve(request.params.agent);
  /** 2xx body of a relay call as the agent, else the relay's error. */
  const call = <T>(session: AgentSession, method: string, path: string, body?: unknown) =>
    session.relay.call<T>({ method, path: `/api/v1/${path}`, ...(body !== undefined ? { body } : {}) });
  const peer = (request: { params: { number: string } }) => `agents/${seg(request.params.number)}`;

  route(app, API.profile, async (request) => call(agent(request), 'GET', 'agents/me'));
  route(app, API.updateProfile, async (request) => call(agent(request), 'PATCH', 'agents/me', request.body));
  route(app, API.heartbeat, async (request) => call(agent(request), 'POST', 'agents/me/heartbeat', request.body ?? {}));
  route(app, API.peerProfile, async (request) => call(agent(request), 'GET', peer(request)));

  const relation = (name: AgentRelation) => {
    // a mute acts on the session at once: the muted sender's messages stop notifying
    const after = async (session: AgentSession) => {
      if (name === 'mute') await session.refreshMutes();
    };
    route(app, API[name], async (request) => {
      const session = agent(request);
      const entry = await call<RelationEntry>(session, 'POST', `${peer(request)}/${name}`, {});
      await after(session);
      return entry;
    });
    route(app, API[name === 'block' ? 'unblock' : 'unmute'], async (request) => {
      const session = agent(request);
      await call(session, 'DELETE', `${peer(request)}/${name}`);
      await after(session);
      return {};
    });
  };
  relation('block');
  relation('mute');
  route(app, API.blocked, async (request) => call(agent(request), 'GET', 'agents/me/blocked'));
  route(app, API.muted, async (request) => call(agent(request), 'GET', 'agents/me/muted'));
  route(app, API.report, async (request) => call(agent(request), 'POST', `${peer(request)}/report`, request.body));

  route(app, API.contacts, async (request) => call(agent(request), 'GET', 'contacts'));
  route(app, API.saveContact, async (request) => {
    const res = await agent(request).relay.request({ method: 'POST', path: '/api/v1/contacts', body: request.body });
    if (res.status < 200 || res.status > 299) throw toRelayError(res);
    // the relay answers 201 for a new contact, 200 for an update
    return { created: res.status === 201, contact: res.body as Contact };
  });
  route(app, API.removeContact, async (request) => {
    await call(agent(request), 'DELETE', `contacts/${seg(request.params.number)}`);
    return {};
  });
}
