import { describe, expect, it } from 'vitest';
import { budgets } from '@costgov/contracts';
import { createLogger } from '@costgov/log';
import { createMemoryLimiter } from '@costgov/ratelimit';
import { createGatewayApp } from '../src/app';
import { authenticator } from '../src/http/auth';
import { loadOpenApiDocument } from '../src/openapi/document';
import { documentOperations } from '../src/openapi/operations';
import { requestValidators } from '../src/openapi/validator';
import { operationRouter, operationTable } from '../src/rest/operation-table';
import { budgetOperations } from '../src/routes/budgets';
import { connectionOperations } from '../src/routes/connections';
import { findingOperations } from '../src/routes/findings';
import { postureOperations } from '../src/routes/posture';
import { projectOperations } from '../src/routes/projects';
import { scanOperations } from '../src/routes/scans';
import { violationOperations } from '../src/routes/violations';
import { webhookOperations } from '../src/routes/webhooks';
import { deadBackends } from './dead-backends';
import { routesOf } from './routes-of';

const document = loadOpenApiDocument();
// Nothing is called: the clients only have to exist for the tables and the app to be built.
const backends = deadBackends(1);
const tables = [
  projectOperations(backends.projects),
  budgetOperations(backends.budgets),
  violationOperations(backends.violations),
  connectionOperations(backends.connections),
  scanOperations(backends.scans),
  findingOperations(backends.findings),
  postureOperations(backends.posture),
  webhookOperations(backends.webhooks),
];
/** Routed by hand: the streamed upload (routes/cost-data.ts). */
const special = ['uploadCostData'];
const guardOperations = [...documentOperations(document).values()].filter((op) =>
  op.path.startsWith('/v1/guard/'),
);

describe('the operation tables', () => {
  it('hold every Guard operation of the document but the streamed upload, each once', () => {
    const inTables = tables.flatMap((table) => Object.keys(table.operations));
    expect(new Set(inTables).size).toBe(inTables.length);
    expect([...inTables, ...special].sort()).toEqual(guardOperations.map((op) => op.operationId).sort());
  });

  it('are mounted at the method and path of the document, every operation exactly once', () => {
    const app = createGatewayApp({
      logger: createLogger('test', 'silent'),
      openapi: document,
      auth: authenticator({ identityClient: {} as never, maxTtlMs: 0 }),
      limiter: createMemoryLimiter(),
      ...backends,
      backendsReady: async () => ({}),
      draining: () => false,
    });
    const routed = routesOf(app).map(({ method, path }) => `${method} ${path}`);
    const times = (operation: string) => routed.filter((route) => route === operation).length;
    const counts = Object.fromEntries(
      guardOperations.map((op) => [op.operationId, times(`${op.method.toUpperCase()} ${op.path}`)]),
    );
    expect(Object.values(counts).length).toBeGreaterThan(30);
    expect(counts).toEqual(Object.fromEntries(guardOperations.map((op) => [op.operationId, 1])));
  });
});

describe('operationRouter refuses at start', () => {
  const validate = requestValidators(document);
  const projects = (operations: Parameters<typeof operationTable<typeof budgets.ProjectsService>>[2]) =>
    operationTable(budgets.ProjectsService, backends.projects, operations);
  const withProjectOwner = () => {
    const copy = structuredClone(document) as {
      components: { schemas: Record<string, { properties: object }> };
    };
    copy.components.schemas.Project!.properties = {
      ...copy.components.schemas.Project!.properties,
      owner: {},
    };
    return copy as unknown as Record<string, unknown>;
  };

  it.each([
    [
      'an operation in two tables',
      () =>
        operationRouter(
          document,
          validate,
          [projects({ getProject: { rpc: 'getProject' } }), projects({ getProject: { rpc: 'getProject' } })],
          '/v1/guard',
        ),
      /'getProject' is in two tables/,
    ],
    [
      'an operation outside the base path',
      () => operationRouter(document, validate, [projects({ getProject: { rpc: 'getProject' } })], '/v2'),
      /\/v1\/guard\/projects\/\{id\} is not under \/v2/,
    ],
    [
      'an operationId the document does not have',
      () =>
        operationRouter(
          document,
          validate,
          [{ ...projects({}), operations: { archiveProject: { rpc: 'getProject' } } } as never],
          '/v1/guard',
        ),
      /no operation 'archiveProject'/,
    ],
    [
      'an rpc the service does not have',
      () =>
        operationRouter(
          document,
          validate,
          [projects({ getProject: { rpc: 'fetchProject' as never } })],
          '/v1/guard',
        ),
      /ProjectsService has no unary rpc 'fetchProject'/,
    ],
    [
      'a field the document adds that the proto does not have',
      () =>
        operationRouter(
          withProjectOwner(),
          requestValidators(withProjectOwner()),
          [projects({ listProjects: { rpc: 'listProjects' } })],
          '/v1/guard',
        ),
      /'owner' of costgov\.budgets\.v1\.Project has no field of that name/,
    ],
    [
      'an acting operation whose request has no actor',
      () =>
        operationRouter(
          document,
          validate,
          [projects({ getProject: { rpc: 'getProject', acting: true } })],
          '/v1/guard',
        ),
      /GetProjectRequest has no field 'actor'/,
    ],
  ])('%s', (_name, mount, error) => {
    expect(mount).toThrow(error);
  });
});
