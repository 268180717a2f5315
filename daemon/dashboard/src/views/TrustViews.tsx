/** Webhook status (from the relay's profile of this agent) and deployment trust. */
import { api } from '../api.js';
import { Badge, Empty, Loaded, Time, ViewHeader } from '../Components.js';
import { useShell } from '../context.js';
import { useLoad } from '../hooks.js';

export function WebhookView() {
  const shell = useShell();
  const [load, retry] = useLoad(() => api.profile(shell.agent), [shell.agent]);
  return (
    <section className="view narrow">
      <ViewHeader title="Webhook" />
      <Loaded load={load} what="the webhook settings" retry={retry}>
        {(p) =>
          p.endpoint_url ? (
            <dl className="facts">
              <dt>Status</dt>
              <dd>
                <Badge tone={p.webhook_secret_set ? 'ok' : 'warn'}>
                  {p.webhook_secret_set ? 'active, signed' : 'no signing secret'}
                </Badge>
              </dd>
              <dt>Endpoint</dt>
              <dd className="mono wrap">{p.endpoint_url}</dd>
              <dt>Deliveries</dt>
              <dd>
                The relay POSTs <code>message.received</code> with an <code>X-Svc-Signature</code>, retrying after 1 s
                and 2 s; what it cannot deliver stays pending for the daemon to pull.
              </dd>
            </dl>
          ) : (
            <Empty title="No webhook set">
              Messages reach this agent through its daemon only. Set one with <code>svc agent webhook set URL</code> if
              another service should be told of new messages.
            </Empty>
          )
        }
      </Loaded>
    </section>
  );
}

const DAY = 86_400_000;

export function DeploymentView() {
  const shell = useShell();
  const [load, retry] = useLoad(() => api.deployments(), [shell.agent]);
  return (
    <section className="view">
      <ViewHeader title="Deployment trust" />
      <p className="view-lede">
        The signed deployment documents this machine trusts. Agents only talk to relays these documents name.
      </p>
      <Loaded load={load} what="deployments" retry={retry}>
        {(list) =>
          list.length === 0 ? (
            <Empty title="No deployment trusted">
              Fetch one with <code>svc deployment fetch URL --trust-bundle FILE</code>.
            </Empty>
          ) : (
            <div className="cards">
              {list.map((d) => {
                const left = Date.parse(d.expires_at) - Date.now();
                const tone = left <= 0 ? 'bad' : left < 14 * DAY ? 'warn' : 'ok';
                return (
                  <article key={d.name} className="card" data-testid={`deployment-${d.name}`}>
                    <header className="card-header">
                      <h3>{d.name}</h3>
                      <Badge tone={tone}>{left <= 0 ? 'expired' : left < 14 * DAY ? 'expires soon' : 'valid'}</Badge>
                    </header>
                    <dl className="facts">
                      <dt>Relay URL</dt>
                      <dd className="mono wrap">{d.api_url}</dd>
                      <dt>Deployment id</dt>
                      <dd className="mono wrap">{d.deployment_id}</dd>
                      <dt>Tenants</dt>
                      <dd>{d.tenants.join(', ')}</dd>
                      <dt>Document expires</dt>
                      <dd>
                        <Time iso={d.expires_at} />{' '}
                        <span className="muted small">({new Date(d.expires_at).toLocaleDateString()})</span>
                      </dd>
                      <dt>Issued</dt>
                      <dd>
                        <Time iso={d.issued_at} />
                      </dd>
                      <dt>Fetched</dt>
                      <dd>
                        <Time iso={d.fetched_at} />
                      </dd>
                    </dl>
                    {tone !== 'ok' ? (
                      <p className="notice warn">
                        Renew it with <code>svc deployment renew {d.name}</code>.
                      </p>
                    ) : null}
                  </article>
                );
              })}
            </div>
          )
        }
      </Loaded>
    </section>
  );
}
