import { DAEMON_API as API } from '../../client/api.js';
import type { DaemonContext } from '../../context.js';
import { checkRelay } from '../../deployments/relay-check.js';
import { deploymentInfo } from '../../deployments/store.js';
import { type DaemonApp, route } from './route.js';

export function deploymentRoutes(app: DaemonApp, ctx: DaemonContext): void {
  const d = ctx.deployments;
  route(app, API.listDeployments, async () => d.list());
  route(app, API.fetchDeployment, async (request) => d.fetch(request.body));
  route(app, API.addDeployment, async (request) => d.add(request.body));
  route(app, API.auditDeployments, async () => d.audit());
  route(app, API.checkRelay, async (request) => checkRelay(request.body.url, d.store.list()));
  route(app, API.diagnoseDeployment, async (request) => d.diagnose(request.params.name, request.query.at));
  route(app, API.getDeployment, async (request) => deploymentInfo(d.get(request.params.name)));
  route(app, API.removeDeployment, async (request) => {
    d.remove(request.params.name);
    return {};
  });
  route(app, API.renewDeployment, async (request) => d.renew(request.params.name, request.body ?? {}));
}
