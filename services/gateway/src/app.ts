import express, { type Express } from 'express';
import type { budgets, costs, notifier, scanner, scim, violations } from '@costgov/contracts';
import asyncApiDocument from '@costgov/events/asyncapi.json';
import type { Logger } from '@costgov/log';
import type { RpcClient } from '@costgov/rpc';
import { observeHttpRequest } from '@costgov/telemetry';
import { createMemoryIdempotencyStore, type IdempotencyStore } from '@costgov/idempotency';
import type { RateLimiter } from '@costgov/ratelimit';
import { accessLog } from './http/access-log';
import { requireGuardScopes, type Authenticator } from './http/auth';
import { idempotency } from './http/idempotency';
import { jsonBody } from './http/body';
import { errorHandler, notFound } from './http/errors';
import { rateLimit } from './http/rate-limit';
import { bodyTimeout, requestContext } from './http/request-context';
import { textRule } from './http/text-rule';
import { requestValidators } from './openapi/validator';
import { operationRouter } from './rest/operation-table';
import { budgetOperations } from './routes/budgets';
import { connectionOperations } from './routes/connections';
import { costDataRoutes, isCostDataUpload, type UploadLimits } from './routes/cost-data';
import { docsRoutes } from './routes/docs';
import { findingOperations } from './routes/findings';
import { postureOperations } from './routes/posture';
import { projectOperations } from './routes/projects';
import { scanOperations } from './routes/scans';
import { scimRoutes } from './routes/scim';
import { violationOperations } from './routes/violations';
import { webhookOperations } from './routes/webhooks';

export interface GatewayDeps {
  logger: Logger;
  openapi: Record<string, unknown>;
  projects: RpcClient<typeof budgets.ProjectsService>;
  scim: RpcClient<typeof scim.ScimService>;
  budgets: RpcClient<typeof budgets.BudgetsService>;
  violations: RpcClient<typeof violations.ViolationsService>;
  connections: RpcClient<typeof costs.ConnectionsService>;
  costData: RpcClient<typeof costs.CostDataService>;
  scans: RpcClient<typeof scanner.ScansService>;
  findings: RpcClient<typeof scanner.FindingsService>;
  posture: RpcClient<typeof scanner.PostureService>;
  webhooks: RpcClient<typeof notifier.WebhooksService>;
  /** The public base URL (e.g. https://api.example.com) for SCIM locations; else taken from the request. */
  publicBaseUrl?: string;
  /** Whether each backend is serving, reported by /readyz (never a reason for it to fail). */
  backendsReady: () => Promise<Record<string, boolean>>;
  /** Express `trust proxy`: which X-Forwarded-For hops give the client address (default: none). */
  trustProxy?: boolean | number | string;
  /** A request body not fully arrived within this many ms is answered 408 (default 30 s); not uploads. */
  bodyTimeoutMs?: number;
  /** Size limit and idle timeout of cost-data uploads (default 2 GiB, 30 s). */
  upload?: UploadLimits;
  /** True once a graceful stop has begun: /readyz then fails so load balancers drain this replica. */
  draining: () => boolean;
  auth: Authenticator;
  limiter: RateLimiter;
  /** Where Idempotency-Key answers are kept (default: this process's memory). */
  idempotency?: IdempotencyStore;
}

export function createGatewayApp(deps: GatewayDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.set('trust proxy', deps.trustProxy ?? false);

  app.use(requestContext);
  // The access log and the request duration histogram share one listener per request.
  app.use(accessLog(deps.logger, observeHttpRequest));
  // An upload may take minutes: it has an idle timeout of its own instead (routes/cost-data.ts).
  app.use(bodyTimeout(deps.bodyTimeoutMs ?? 30_000, isCostDataUpload));

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  // Readiness is the gateway's own: a backend that is down answers 503 per request rather than taking
  // every gateway replica out of the load balancer. The backends' state is reported for operators, and
  // a report that fails leaves readiness as it is.
  app.get('/readyz', async (_req, res) => {
    const backends = await deps.backendsReady().catch((error: unknown) => {
      deps.logger.warn({ err: error }, 'backend health report failed');
      return {};
    });
    const ready = !deps.draining();
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'draining', backends });
  });
  app.get('/v1/openapi.json', (_req, res) => {
    res.json(deps.openapi);
  });
  app.use('/v1/docs', docsRoutes(deps.openapi));
  // The events other services can consume (libs/events), generated from the proto files.
  app.get('/v1/asyncapi.json', (_req, res) => {
    res.json(asyncApiDocument);
  });

  const limit = rateLimit(deps.limiter);
  // API keys and OAuth tokens open /v1; SCIM tokens open /scim/v2 and nothing else.
  app.use('/v1', deps.auth.authenticate(['api_key', 'oauth']), limit, requireGuardScopes);
  app.use('/scim/v2', deps.auth.authenticate(['scim_token']), limit);
  // Uploads stream their body to the costs service, so they are routed before the JSON parser.
  app.use('/v1/guard/connections', costDataRoutes(deps.costData, deps.upload));
  app.use(jsonBody);
  app.use('/v1', textRule('guard'));
  app.use('/scim/v2', textRule('scim'));
  // After authentication (keys are per team) and the body parser (the body is part of the fingerprint).
  app.use('/v1/guard', idempotency(deps.idempotency ?? createMemoryIdempotencyStore()));
  // Each Guard operation is routed where the document puts it, and validated against it first (compiled
  // once here). SCIM documents are validated by identity, which owns them.
  app.use(
    '/v1/guard',
    operationRouter(
      deps.openapi,
      requestValidators(deps.openapi),
      [
        projectOperations(deps.projects),
        budgetOperations(deps.budgets),
        violationOperations(deps.violations),
        connectionOperations(deps.connections),
        scanOperations(deps.scans),
        findingOperations(deps.findings),
        postureOperations(deps.posture),
        webhookOperations(deps.webhooks),
      ],
      '/v1/guard',
    ),
  );
  app.use('/scim/v2', scimRoutes(deps.scim, { publicBaseUrl: deps.publicBaseUrl }));

  app.use(notFound);
  app.use(errorHandler(deps.logger));
  return app;
}
