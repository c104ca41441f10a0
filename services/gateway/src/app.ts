import express, { type Express } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import type { budgets, scim } from '@costgov/contracts';
import type { Logger } from '@costgov/log';
import type { RpcClient } from '@costgov/rpc';
import { metrics } from '@costgov/telemetry';
import type { RateLimiter } from '@costgov/ratelimit';
import { requireGuardScopes, type Authenticator } from './http/auth';
import { errorHandler, notFound } from './http/errors';
import { rateLimit } from './http/rate-limit';
import { requestContext } from './http/request-context';
import { projectRoutes } from './routes/projects';
import { scimRoutes } from './routes/scim';

export interface GatewayDeps {
  logger: Logger;
  openapi: Record<string, unknown>;
  projects: RpcClient<typeof budgets.ProjectsService>;
  scim: RpcClient<typeof scim.ScimService>;
  /** The public base URL (e.g. https://api.example.com) for SCIM locations; else taken from the request. */
  publicBaseUrl?: string;
  /** Whether each backend is serving, reported by /readyz. */
  backendsReady: () => Promise<Record<string, boolean>>;
  /** True once a graceful stop has begun: /readyz then fails so load balancers drain this replica. */
  draining: () => boolean;
  auth: Authenticator;
  limiter: RateLimiter;
}

export const bodyLimit = '1mb';

function guardOnly(document: Record<string, unknown>): Record<string, unknown> {
  const paths = document.paths as Record<string, unknown>;
  return {
    ...document,
    paths: Object.fromEntries(Object.entries(paths).filter(([path]) => path.startsWith('/v1/guard/'))),
  };
}

export function createGatewayApp(deps: GatewayDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');

  app.use(requestContext);
  app.use((req, res, next) => {
    const end = metrics.httpRequests.startTimer({ method: req.method });
    res.on('finish', () =>
      end({ route: req.route ? `${req.baseUrl}${req.route.path}` : 'unmatched', status: res.statusCode }),
    );
    next();
  });

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  // Readiness is the gateway's own: a backend that is down answers 503 per request rather than taking
  // every gateway replica out of the load balancer. The backends' state is reported for operators.
  app.get('/readyz', async (_req, res) => {
    const backends = await deps.backendsReady();
    const ready = !deps.draining();
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'draining', backends });
  });
  app.get('/v1/openapi.json', (_req, res) => {
    res.json(deps.openapi);
  });

  const limit = rateLimit(deps.limiter);
  // API keys and OAuth tokens open /v1; SCIM tokens open /scim/v2 and nothing else.
  app.use('/v1', deps.auth.authenticate(['api_key', 'oauth']), limit, requireGuardScopes);
  app.use('/scim/v2', deps.auth.authenticate(['scim_token']), limit);
  app.use(express.json({ limit: bodyLimit, type: ['application/json', 'application/*+json'] }));
  app.use(
    OpenApiValidator.middleware({
      // Only the Guard paths: the validator tries every documented path per request (compiling each
      // pattern anew), and SCIM documents are validated by identity, which owns them.
      apiSpec: guardOnly(deps.openapi) as never,
      // Bodies are not coerced ("42" is not a name); query parameters always are. One detail per field.
      validateRequests: {
        allowUnknownQueryParameters: false,
        coerceTypes: false,
        removeAdditional: false,
        allErrors: true,
      },
      validateResponses: false,
      validateSecurity: false,
      ignoreUndocumented: true,
      ignorePaths: (path: string) => !path.startsWith('/v1/'),
    }),
  );
  app.use('/v1/guard/projects', projectRoutes(deps.projects));
  app.use('/scim/v2', scimRoutes(deps.scim, { publicBaseUrl: deps.publicBaseUrl }));

  app.use(notFound);
  app.use(errorHandler(deps.logger));
  return app;
}
