import { Router, type Request } from 'express';
import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import type { violations } from '@costgov/contracts';
import type { CallContext, RpcClient } from '@costgov/rpc';
import { sendData } from '../http/envelope';
import type { RequestValidators } from '../openapi/validator';
import { callContext } from '../http/call-context';
import { metaJson, pageOf } from '../http/paging';

type ViolationsClient = RpcClient<typeof violations.ViolationsService>;

const iso = (ts: Timestamp | undefined) => (ts ? timestampDate(ts).toISOString() : null);

export const violationJson = (v: violations.Violation) => ({
  id: v.id,
  project_id: v.projectId,
  budget_id: v.budgetId,
  type: v.type,
  severity: v.severity,
  status: v.status,
  message: v.message,
  current_value: v.currentValue,
  threshold_value: v.thresholdValue,
  threshold_percentage: v.thresholdPercentage,
  currency: v.currency,
  period_start: v.periodStart,
  created_at: iso(v.createdAt),
  updated_at: iso(v.updatedAt),
  acknowledged_at: iso(v.acknowledgedAt),
  acknowledged_by: v.acknowledgedBy ?? null,
  acknowledgement_note: v.acknowledgeNote ?? null,
  resolved_at: iso(v.resolvedAt),
  resolved_by: v.resolvedBy ?? null,
  resolution_note: v.resolveNote ?? null,
});

/** Who acts: the SCIM user behind an OAuth token, else the API key. */
const actorOf = (req: Request): string =>
  (req.principal.kind === 'oauth' && req.principal.userId) || req.principal.credentialId;

const actingContext = (req: Request): CallContext => Object.assign(callContext(req), { actor: actorOf(req) });

/** `-created_at` → descending by created_at; the service refuses unknown fields. */
const sortOf = (sort: string | undefined) =>
  sort === undefined ? undefined : { field: sort.replace(/^-/, ''), descending: sort.startsWith('-') };

/** REST ↔ gRPC mapping of /v1/guard/violations; each route first validates against its operation. */
export function violationRoutes(client: ViolationsClient, validate: RequestValidators): Router {
  const router = Router();

  router.get('/', validate('listViolations'), async (req, res) => {
    const query = req.query as {
      project_id?: string;
      budget_id?: string;
      severity?: string;
      status?: string;
      sort?: string;
      page?: string;
      per_page?: string;
    };
    const result = await client.listViolations(
      {
        projectId: query.project_id,
        budgetId: query.budget_id,
        severity: query.severity,
        status: query.status,
        sort: sortOf(query.sort),
        page: pageOf(query),
      },
      callContext(req),
    );
    const meta = result.meta!;
    sendData(res, 200, result.violations.map(violationJson), metaJson(meta));
  });

  router.get('/:id', validate('getViolation'), async (req, res) => {
    sendData(
      res,
      200,
      violationJson(await client.getViolation({ id: String(req.params.id) }, callContext(req))),
    );
  });

  router.post('/:id/acknowledge', validate('acknowledgeViolation'), async (req, res) => {
    const body = (req.body ?? {}) as { note?: string };
    const ctx = actingContext(req);
    const violation = await client.acknowledgeViolation(
      { id: String(req.params.id), note: body.note, actor: ctx.actor! },
      ctx,
    );
    sendData(res, 200, violationJson(violation));
  });

  router.post('/:id/resolve', validate('resolveViolation'), async (req, res) => {
    const body = (req.body ?? {}) as { note?: string };
    const ctx = actingContext(req);
    const violation = await client.resolveViolation(
      { id: String(req.params.id), note: body.note, actor: ctx.actor! },
      ctx,
    );
    sendData(res, 200, violationJson(violation));
  });

  return router;
}
