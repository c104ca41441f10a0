import { Router, type Request } from 'express';
import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import type { scanner } from '@costgov/contracts';
import type { CallContext, RpcClient } from '@costgov/rpc';
import { sendData } from '../http/envelope';
import type { RequestValidators } from '../openapi/validator';
import { callContext } from '../http/call-context';
import { metaJson, pageOf } from '../http/paging';

type FindingsClient = RpcClient<typeof scanner.FindingsService>;

const iso = (ts: Timestamp | undefined) => (ts ? timestampDate(ts).toISOString() : null);

/** The REST Finding: the spec's fields, then the extensions; GET /v1/guard/scans/:id uses it too. */
export const findingJson = (f: scanner.Finding) => ({
  id: f.id,
  scan_id: f.scanId,
  project_id: f.projectId,
  resource_id: f.resourceId,
  resource_type: f.resourceType,
  severity: f.severity,
  status: f.status,
  title: f.title,
  description: f.description,
  recommendation: f.recommendation,
  created_at: iso(f.createdAt),
  rule_id: f.ruleId,
  estimated_monthly_savings: f.estimatedMonthlySavings ?? null,
  currency: f.currency,
  suppression_reason: f.suppressionReason ?? null,
  updated_at: iso(f.updatedAt),
  resolved_at: iso(f.resolvedAt),
});

/** Who acts: the SCIM user behind an OAuth token, else the API key. */
const actorOf = (req: Request): string =>
  (req.principal.kind === 'oauth' && req.principal.userId) || req.principal.credentialId;

const actingContext = (req: Request): CallContext => Object.assign(callContext(req), { actor: actorOf(req) });

/** REST ↔ gRPC mapping of /v1/guard/findings; each route first validates against its operation. */
export function findingRoutes(client: FindingsClient, validate: RequestValidators): Router {
  const router = Router();

  router.get('/', validate('listFindings'), async (req, res) => {
    const query = req.query as {
      scan_id?: string;
      project_id?: string;
      severity?: string;
      status?: string;
      rule_id?: string;
      page?: string;
      per_page?: string;
    };
    const result = await client.listFindings(
      {
        scanId: query.scan_id,
        projectId: query.project_id,
        severity: query.severity,
        status: query.status,
        ruleId: query.rule_id,
        page: pageOf(query),
      },
      callContext(req),
    );
    const meta = result.meta!;
    sendData(res, 200, result.findings.map(findingJson), metaJson(meta));
  });

  router.patch('/:id', validate('updateFinding'), async (req, res) => {
    const body = req.body as { status: string; reason?: string };
    const ctx = actingContext(req);
    const finding = await client.updateFinding(
      { id: String(req.params.id), status: body.status, reason: body.reason, actor: ctx.actor! },
      ctx,
    );
    sendData(res, 200, findingJson(finding));
  });

  return router;
}
