/**
 * The baseline of the benchmark: one process, express 5 and pg, answering GET /v1/guard/projects/:id
 * with the two queries getProject runs (services/budgets/src/projects/projects.ts) and the gateway's
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

const selectProject = `SELECT p.*,
  (SELECT count(*) FROM budgets b WHERE b.project_id = p.id AND b.status <> 'archived')::int AS budget_count
  FROM projects p WHERE p.team_id = $1 AND p.id = $2`;

const selectBudgets = `SELECT id, name, amount, currency, period, status,
  CASE WHEN amount > 0 THEN round(current_spend / amount * 100, 2) ELSE 0 END AS percentage_used
  FROM budgets WHERE team_id = $1 AND project_id = $2 ORDER BY created_at, id`;

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
  const project = (await pool.query(selectProject, [teamId, id])).rows[0];
  if (!project) {
    res
      .status(404)
      .json({ error: { code: 'not_found', message: `Project '${id}' was not found.`, details: [] } });
    return;
  }
  const budgets = (await pool.query(selectBudgets, [teamId, id])).rows;
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
      budgets: budgets.map((b) => ({
        id: b.id,
        name: b.name,
        amount: Number(b.amount),
        currency: b.currency,
        period: b.period,
        percentage_used: Number(b.percentage_used),
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
