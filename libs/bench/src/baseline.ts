/**
 * The baseline of the benchmark: one process, express 5 and pg, answering GET /v1/guard/projects/:id
 * with the statement getProject runs (services/budgets/src/projects/projects.ts) and the gateway's
 * JSON. The bearer key is compared with a constant, so authentication costs next to nothing here.
 */
import express from 'express';
import pg from 'pg';

const { DATABASE_URL, PORT, BENCH_API_KEY, BENCH_TEAM_ID } = process.env;
if (!DATABASE_URL || !PORT || !BENCH_API_KEY || !BENCH_TEAM_ID)
  throw new Error('DATABASE_URL, PORT, BENCH_API_KEY and BENCH_TEAM_ID are required');

// As libs/db opens the budgets service's database: a pool of 10 with the schema on the search path.
const pool = new pg.Pool({
  connectionString: DATABASE_URL,
  max: 10,
  options: '-c search_path=budgets,public',
});

// The statement getProject runs: the project, its budget_count and its budget summaries in one round trip.
const selectProjectDetail = `SELECT p.*, s.budget_count, s.budgets
  FROM projects p CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE b.status <> 'archived')::int AS budget_count,
      coalesce(json_agg(json_build_object(
        'id', b.id, 'name', b.name, 'amount', b.amount, 'currency', b.currency, 'period', b.period,
        'status', b.status,
        'percentageUsed', b.percentage_used
      ) ORDER BY b.created_at, b.id), '[]') AS budgets
    FROM budgets b WHERE b.team_id = p.team_id AND b.project_id = p.id) s
  WHERE p.team_id = $1 AND p.id = $2`;

interface BudgetSummary {
  id: string;
  name: string;
  amount: number;
  currency: string;
  period: string;
  status: string;
  percentageUsed: number;
}

const bearer = `Bearer ${BENCH_API_KEY}`;
const teamId = BENCH_TEAM_ID;

const app = express();
app.disable('x-powered-by');
app.set('etag', false);

app.get('/readyz', async (_req, res) => {
  const ok = await pool.query('SELECT 1').then(
    () => true,
    () => false,
  );
  res.status(ok ? 200 : 503).json({ status: ok ? 'ready' : 'not ready', backends: { postgres: ok } });
});

app.get('/v1/guard/projects/:id', async (req, res) => {
  if (req.get('authorization') !== bearer) {
    res.status(401).json({ error: { code: 'unauthenticated', message: 'Invalid credential.', details: [] } });
    return;
  }
  const id = req.params.id;
  const project = (await pool.query(selectProjectDetail, [teamId, id])).rows[0];
  if (!project) {
    res
      .status(404)
      .json({ error: { code: 'not_found', message: `Project '${id}' was not found.`, details: [] } });
    return;
  }
  const rules = project.approval_rules as { requireApprovalAbove?: number; approvers: string[] } | null;
  res.json({
    data: {
      id: project.id,
      name: project.name,
      status: project.status,
      connection_ids: project.connection_ids,
      budget_count: project.budget_count,
      violation_count: project.violation_count,
      created_at: project.created_at.toISOString(),
      updated_at: project.updated_at.toISOString(),
      budgets: (project.budgets as BudgetSummary[]).map((b) => ({
        id: b.id,
        name: b.name,
        amount: b.amount,
        currency: b.currency,
        period: b.period,
        percentage_used: b.percentageUsed,
        status: b.status,
      })),
      approval_rules: rules && {
        require_approval_above: rules.requireApprovalAbove ?? null,
        approvers: rules.approvers,
      },
    },
  });
});

const server = app.listen(Number(PORT), '127.0.0.1');
const stop = () => server.close(() => void pool.end().then(() => process.exit(0)));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
