import { Router } from 'express';
import type { scanner } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';
import { sendData } from '../http/envelope';
import type { RequestValidators } from '../openapi/validator';
import { callContext } from '../http/call-context';

type FindingsClient = RpcClient<typeof scanner.FindingsService>;

export const ruleJson = (rule: scanner.Rule) => ({
  id: rule.id,
  severity: rule.severity,
  category: rule.category,
  title: rule.title,
  description: rule.description,
  recommendation: rule.recommendation,
});

/** GET /v1/guard/rules (extension): the scanner's rule catalogue, the same for every team. */
export function ruleRoutes(client: FindingsClient, validate: RequestValidators): Router {
  const router = Router();

  router.get('/', validate('listRules'), async (req, res) => {
    const { rules } = await client.listRules({}, callContext(req));
    sendData(res, 200, rules.map(ruleJson));
  });

  return router;
}
