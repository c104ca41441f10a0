import { Router } from 'express';
import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import type { scanner } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';
import { sendData } from '../http/envelope';
import type { RequestValidators } from '../openapi/validator';
import { findingJson } from './findings';
import { callContext } from '../http/call-context';
import { metaJson, pageOf } from '../http/paging';

type ScansClient = RpcClient<typeof scanner.ScansService>;

const iso = (ts: Timestamp | undefined) => (ts ? timestampDate(ts).toISOString() : null);

export const scanJson = (s: scanner.Scan) => ({
  id: s.id,
  project_id: s.projectId,
  status: s.status,
  resources_scanned: s.resourcesScanned,
  findings_count: s.findingsCount,
  credits_used: s.creditsUsed,
  error: s.error ?? null,
  started_at: iso(s.startedAt),
  completed_at: iso(s.completedAt),
  created_at: iso(s.createdAt),
});

/** REST ↔ gRPC mapping of /v1/guard/scans; each route first validates against its operation. */
export function scanRoutes(client: ScansClient, validate: RequestValidators): Router {
  const router = Router();

  router.get('/', validate('listScans'), async (req, res) => {
    const query = req.query as { project_id?: string; status?: string; page?: string; per_page?: string };
    const result = await client.listScans(
      {
        projectId: query.project_id,
        status: query.status,
        page: pageOf(query),
      },
      callContext(req),
    );
    const meta = result.meta!;
    sendData(res, 200, result.scans.map(scanJson), metaJson(meta));
  });

  // 202: the scan is accepted and queued; a worker runs it (poll GET /v1/guard/scans/:id).
  router.post('/', validate('createScan'), async (req, res) => {
    const body = req.body as { project_id: string };
    const scan = await client.createScan({ projectId: body.project_id }, callContext(req));
    res.setHeader('Location', `/v1/guard/scans/${scan.id}`);
    sendData(res, 202, scanJson(scan));
  });

  router.get('/:id', validate('getScan'), async (req, res) => {
    const scan = await client.getScan({ id: String(req.params.id) }, callContext(req));
    sendData(res, 200, { ...scanJson(scan), findings: scan.findings.map(findingJson) });
  });

  return router;
}
