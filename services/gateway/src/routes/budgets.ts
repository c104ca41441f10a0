import { Router } from 'express';
import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import type { budgets } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';
import { sendData } from '../http/envelope';
import type { RequestValidators } from '../openapi/validator';
import { callContext } from '../http/call-context';
import { metaJson, pageOf } from '../http/paging';

type BudgetsClient = RpcClient<typeof budgets.BudgetsService>;

const iso = (ts: Timestamp | undefined) => (ts ? timestampDate(ts).toISOString() : null);

export const budgetJson = (b: budgets.Budget) => ({
  id: b.id,
  project_id: b.projectId,
  name: b.name,
  amount: b.amount,
  currency: b.currency,
  period: b.period,
  current_spend: b.currentSpend,
  percentage_used: b.percentageUsed,
  forecast_spend: b.forecastSpend,
  unconverted_spend: b.unconvertedSpend.map((u) => ({ currency: u.currency, amount: u.amount })),
  status: b.status,
  thresholds: b.thresholds.map((t) => ({ percentage: t.percentage, notified_at: iso(t.notifiedAt) })),
  tags: b.tags,
  period_start: iso(b.periodStart),
  period_end: iso(b.periodEnd),
  evaluated_at: iso(b.evaluatedAt),
  created_at: iso(b.createdAt),
  updated_at: iso(b.updatedAt),
});

interface BudgetBody {
  project_id?: string;
  name?: string;
  amount?: number;
  currency?: string;
  period?: string;
  thresholds?: number[];
  tags?: Record<string, string>;
  status?: string;
}

/** `-amount` → descending by amount; the service refuses unknown fields. */
const sortOf = (sort: string | undefined) =>
  sort === undefined ? undefined : { field: sort.replace(/^-/, ''), descending: sort.startsWith('-') };

/** REST ↔ gRPC mapping of /v1/guard/budgets; each route first validates against its operation. */
export function budgetRoutes(client: BudgetsClient, validate: RequestValidators): Router {
  const router = Router();

  router.get('/', validate('listBudgets'), async (req, res) => {
    const query = req.query as {
      project_id?: string;
      status?: string;
      sort?: string;
      page?: string;
      per_page?: string;
    };
    const result = await client.listBudgets(
      {
        projectId: query.project_id,
        status: query.status,
        sort: sortOf(query.sort),
        page: pageOf(query),
      },
      callContext(req),
    );
    const meta = result.meta!;
    sendData(res, 200, result.budgets.map(budgetJson), metaJson(meta));
  });

  router.post('/', validate('createBudget'), async (req, res) => {
    const body = req.body as BudgetBody;
    const budget = await client.createBudget(
      {
        projectId: body.project_id,
        name: body.name,
        amount: body.amount,
        currency: body.currency,
        period: body.period,
        thresholds: body.thresholds,
        tags: body.tags,
      },
      callContext(req),
    );
    res.setHeader('Location', `/v1/guard/budgets/${budget.id}`);
    sendData(res, 201, budgetJson(budget));
  });

  router.get('/:id', validate('getBudget'), async (req, res) => {
    sendData(res, 200, budgetJson(await client.getBudget({ id: String(req.params.id) }, callContext(req))));
  });

  router.patch('/:id', validate('updateBudget'), async (req, res) => {
    const body = req.body as BudgetBody;
    const budget = await client.updateBudget(
      {
        id: String(req.params.id),
        name: body.name,
        amount: body.amount,
        currency: body.currency,
        period: body.period,
        thresholds: body.thresholds ? { values: body.thresholds } : undefined,
        tags: body.tags ? { values: body.tags } : undefined,
        status: body.status,
      },
      callContext(req),
    );
    sendData(res, 200, budgetJson(budget));
  });

  router.delete('/:id', validate('deleteBudget'), async (req, res) => {
    await client.deleteBudget({ id: String(req.params.id) }, callContext(req));
    res.status(204).end();
  });

  return router;
}
