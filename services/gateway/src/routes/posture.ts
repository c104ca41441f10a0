import { Router } from 'express';
import type { scanner } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';
import { sendData } from '../http/envelope';
import type { RequestValidators } from '../openapi/validator';
import { callContext } from '../http/call-context';

type PostureClient = RpcClient<typeof scanner.PostureService>;

export const costPostureJson = (posture: scanner.CostPosture) => ({
  score: posture.score,
  max_score: posture.maxScore,
  grade: posture.grade,
  breakdown: {
    budget_compliance: posture.breakdown?.budgetCompliance ?? 0,
    tag_coverage: posture.breakdown?.tagCoverage ?? 0,
    recommendation_adoption: posture.breakdown?.recommendationAdoption ?? 0,
  },
  trend: posture.trend,
  date: posture.date,
});

/** REST ↔ gRPC mapping of /v1/guard/cost-posture; the scanner decides the day (today, past, future). */
export function postureRoutes(client: PostureClient, validate: RequestValidators): Router {
  const router = Router();

  router.get('/', validate('getCostPosture'), async (req, res) => {
    const query = req.query as { project_id?: string; date?: string };
    const posture = await client.getCostPosture(
      { projectId: query.project_id, date: query.date ?? '' },
      callContext(req),
    );
    sendData(res, 200, costPostureJson(posture));
  });

  return router;
}
