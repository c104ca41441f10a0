import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Bus, Consumer } from '@costgov/bus';
import { budgets, costs, identity, notifier, scanner, scim, violations } from '@costgov/contracts';
import type { Logger } from '@costgov/log';
import { createHealthChecker, createRpcClient, type HealthChecker } from '@costgov/rpc';
import { createGatewayApp } from './app';
import { drainMsOf } from '@costgov/config';
import type { GatewayConfig } from './config';
import { authenticator } from './http/auth';
import { createIdempotencyStore } from './idempotency-store';
import { createLimiter } from './limiter';
import { loadOpenApiDocument } from './openapi/document';
import { listenForRevocations } from './revocations';

export interface RunningGateway {
  port: number;
  /**
   * Fails readiness and keeps serving for the drain period (SHUTDOWN_DRAIN_MS), then refuses new
   * connections and lets requests in flight finish for up to SHUTDOWN_GRACE_MS. Idempotent.
   */
  stop(): Promise<void>;
}

/** The gateway could not take its port (in use, not permitted): the process should exit. */
export class ListenError extends Error {}

/**
 * Starts the HTTP gateway. With a bus, revocations reach this replica's authentication cache at once.
 * Rejects with a ListenError when the port cannot be bound.
 */
export async function startGateway(
  config: GatewayConfig,
  logger: Logger,
  options: { bus?: Bus } = {},
): Promise<RunningGateway> {
  const rpcOptions = { deadlineMs: config.RPC_DEADLINE_MS };
  const identityClient = createRpcClient(identity.IdentityService, config.IDENTITY_ADDR, rpcOptions);
  const projectsClient = createRpcClient(budgets.ProjectsService, config.BUDGETS_ADDR, rpcOptions);
  const scimClient = createRpcClient(scim.ScimService, config.IDENTITY_ADDR, rpcOptions);
  const budgetsClient = createRpcClient(budgets.BudgetsService, config.BUDGETS_ADDR, rpcOptions);
  const violationsClient = createRpcClient(violations.ViolationsService, config.VIOLATIONS_ADDR, rpcOptions);
  const connectionsClient = createRpcClient(costs.ConnectionsService, config.COSTS_ADDR, rpcOptions);
  const costDataClient = createRpcClient(costs.CostDataService, config.COSTS_ADDR, rpcOptions);
  const scansClient = createRpcClient(scanner.ScansService, config.SCANNER_ADDR, rpcOptions);
  const findingsClient = createRpcClient(scanner.FindingsService, config.SCANNER_ADDR, rpcOptions);
  const postureClient = createRpcClient(scanner.PostureService, config.SCANNER_ADDR, rpcOptions);
  const webhooksClient = createRpcClient(notifier.WebhooksService, config.NOTIFIER_ADDR, rpcOptions);
  const clients = [
    identityClient,
    projectsClient,
    scimClient,
    budgetsClient,
    violationsClient,
    connectionsClient,
    costDataClient,
    scansClient,
    findingsClient,
    postureClient,
    webhooksClient,
  ];
  // /readyz reports each backend through a health checker kept open for the life of the gateway.
  const backends = Object.fromEntries(
    Object.entries({
      identity: config.IDENTITY_ADDR,
      budgets: config.BUDGETS_ADDR,
      violations: config.VIOLATIONS_ADDR,
      costs: config.COSTS_ADDR,
      scanner: config.SCANNER_ADDR,
      notifier: config.NOTIFIER_ADDR,
    }).map(([name, address]) => [name, createHealthChecker(address)]),
  );
  const limiter = await createLimiter(config, logger);
  const idempotencyStore = await createIdempotencyStore(config, logger);
  const auth = authenticator({
    identityClient,
    maxTtlMs: config.AUTH_CACHE_TTL_MS,
    negativeTtlMs: config.AUTH_NEGATIVE_CACHE_TTL_MS,
    failures: { limiter, perMinute: config.AUTH_FAILURES_PER_MINUTE },
  });
  const closeClients = () => [...clients, ...Object.values(backends)].forEach((client) => client.close());
  let draining = false;
  const app = createGatewayApp({
    logger,
    openapi: loadOpenApiDocument(),
    projects: projectsClient,
    scim: scimClient,
    budgets: budgetsClient,
    violations: violationsClient,
    connections: connectionsClient,
    costData: costDataClient,
    scans: scansClient,
    findings: findingsClient,
    posture: postureClient,
    webhooks: webhooksClient,
    publicBaseUrl: config.PUBLIC_BASE_URL,
    trustProxy: config.TRUST_PROXY,
    bodyTimeoutMs: config.BODY_TIMEOUT_MS,
    upload: {
      maxBytes: config.UPLOAD_MAX_BYTES,
      idleTimeoutMs: config.UPLOAD_IDLE_TIMEOUT_MS,
      leaseRenewMs: Math.max(1, Math.floor(config.RATE_LIMIT_LEASE_TTL_MS / 3)),
    },
    auth,
    limiter,
    idempotency: idempotencyStore,
    draining: () => draining,
    backendsReady: () => backendStates(backends),
  });

  const server = createServer(
    {
      // Below the concurrency lease, so a slow client cannot hold a slot past its expiry. Node checks
      // these every connectionsCheckingInterval (30 s by default, which would overshoot the lease).
      headersTimeout: config.HEADERS_TIMEOUT_MS,
      // Node's requestTimeout is server-wide and would cut a cost-data upload that takes minutes: the
      // body timeout (BODY_TIMEOUT_MS, after the headers) bounds every other request, an idle timeout
      // (UPLOAD_IDLE_TIMEOUT_MS) each upload.
      requestTimeout: 0,
      connectionsCheckingInterval: 1_000,
    },
    app,
  );
  server.on('clientError', answerUnparsable);
  try {
    await listen(server, config.PORT, config.HOST);
  } catch (error) {
    await limiter.close();
    await idempotencyStore.close();
    closeClients();
    throw error;
  }
  const revocations: Consumer | undefined =
    options.bus && (await listenForRevocations(options.bus, auth, logger));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  logger.info({ port }, 'gateway listening');

  let stopped: Promise<void> | undefined;
  return {
    port,
    stop: () => (stopped ??= stop()),
  };

  async function stop(): Promise<void> {
    draining = true;
    const drainMs = drainMsOf(config);
    if (drainMs > 0) {
      logger.info({ drainMs }, 'draining: /readyz answers 503 while requests are still served');
      await new Promise((resolve) => setTimeout(resolve, drainMs));
    }
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const timer = setTimeout(() => server.closeAllConnections(), config.SHUTDOWN_GRACE_MS);
    await closed;
    clearTimeout(timer);
    await revocations?.stop();
    await limiter.close();
    await idempotencyStore.close();
    closeClients();
    logger.info('gateway stopped');
  }
}

const unparsable: Record<string, [status: number, reason: string, message: string]> = {
  HPE_HEADER_OVERFLOW: [
    431,
    'Request Header Fields Too Large',
    'The request line and headers exceed 16 KiB.',
  ],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'The request did not arrive in time.'],
  ERR_HTTP_HEADERS_TIMEOUT: [408, 'Request Timeout', 'The request headers did not arrive in time.'],
};

/**
 * A request Node cannot parse (headers over 16 KiB, a malformed request line) never reaches express: it
 * gets the error envelope and an X-Request-Id here rather than Node's bare status line. Its path is not
 * known, so it is the Guard API's envelope.
 */
function answerUnparsable(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, reason, message] = unparsable[error.code ?? ''] ?? [
    400,
    'Bad Request',
    'The request is not valid HTTP/1.1.',
  ];
  const body = JSON.stringify({ error: { code: 'bad_request', message, details: [] } });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: req_${randomUUID().replaceAll('-', '')}\r\n` +
      `Connection: close\r\n\r\n${body}`,
  );
}

/** Binds the server, rejecting (instead of express 5's silent callback) when the port cannot be had. */
function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      const reason =
        error.code === 'EADDRINUSE'
          ? 'the address is already in use'
          : error.code === 'EACCES'
            ? 'permission denied'
            : error.message;
      reject(new ListenError(`Cannot listen on ${host}:${port}: ${reason} (PORT, HOST).`, { cause: error }));
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

/** Whether each backend answers its health check as serving; one that is down or throws is `false`. */
async function backendStates(backends: Record<string, HealthChecker>): Promise<Record<string, boolean>> {
  const states = await Promise.all(
    Object.entries(backends).map(async ([name, checker]) => {
      const serving = await checker.check().then(
        (status) => status === 'SERVING',
        () => false,
      );
      return [name, serving] as const;
    }),
  );
  return Object.fromEntries(states);
}
