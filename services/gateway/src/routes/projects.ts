import { Router } from 'express';
import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import type { budgets } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';
import { callContext } from '../http/call-context';
import { sendData } from '../http/envelope';
import type { RequestValidators } from '../openapi/validator';
import { metaJson, pageOf } from '../http/paging';

type ProjectsClient = RpcClient<typeof budgets.ProjectsService>;

const iso = (ts: Timestamp | undefined) => (ts ? timestampDate(ts).toISOString() : null);

const approvalRulesJson = (rules: budgets.ApprovalRules | undefined) =>
  rules ? { require_approval_above: rules.requireApprovalAbove ?? null, approvers: rules.approvers } : null;

export const projectJson = (p: budgets.Project) => ({
  id: p.id,
  name: p.name,
  status: p.status,
  connection_ids: p.connectionIds,
  budget_count: p.budgetCount,
  violation_count: p.violationCount,
  created_at: iso(p.createdAt),
  updated_at: iso(p.updatedAt),
});

export const projectDetailJson = (p: budgets.Project) => ({
  ...projectJson(p),
  budgets: p.budgets.map((b) => ({
    id: b.id,
    name: b.name,
    amount: b.amount,
    currency: b.currency,
    period: b.period,
    percentage_used: b.percentageUsed,
    status: b.status,
  })),
  approval_rules: approvalRulesJson(p.approvalRules),
});

interface ApprovalRulesBody {
  require_approval_above?: number;
  approvers?: string[];
}

const approvalRulesInput = (rules: ApprovalRulesBody) => ({
  requireApprovalAbove: rules.require_approval_above,
  approvers: rules.approvers ?? [],
});

/** REST ↔ gRPC mapping of /v1/guard/projects; each route first validates against its operation. */
export function projectRoutes(client: ProjectsClient, validate: RequestValidators): Router {
  const router = Router();

  router.get('/', validate('listProjects'), async (req, res) => {
    const query = req.query as { status?: string; connection_id?: string; page?: string; per_page?: string };
    const result = await client.listProjects(
      {
        status: query.status,
        connectionId: query.connection_id,
        page: pageOf(query),
      },
      callContext(req),
    );
    const meta = result.meta!;
    sendData(res, 200, result.projects.map(projectJson), metaJson(meta));
  });

  router.post('/', validate('createProject'), async (req, res) => {
    const body = req.body as { name: string; connection_ids?: string[]; approval_rules?: ApprovalRulesBody };
    const project = await client.createProject(
      {
        name: body.name,
        connectionIds: body.connection_ids ?? [],
        approvalRules: body.approval_rules ? approvalRulesInput(body.approval_rules) : undefined,
      },
      callContext(req),
    );
    res.setHeader('Location', `/v1/guard/projects/${project.id}`);
    sendData(res, 201, projectDetailJson(project));
  });

  router.get('/:id', validate('getProject'), async (req, res) => {
    sendData(
      res,
      200,
      projectDetailJson(await client.getProject({ id: String(req.params.id) }, callContext(req))),
    );
  });

  router.patch('/:id', validate('updateProject'), async (req, res) => {
    const body = req.body as {
      name?: string;
      status?: string;
      connection_ids?: string[];
      approval_rules?: ApprovalRulesBody | null;
    };
    const project = await client.updateProject(
      {
        id: String(req.params.id),
        name: body.name,
        status: body.status,
        connectionIds: body.connection_ids ? { values: body.connection_ids } : undefined,
        approvalRules: body.approval_rules ? approvalRulesInput(body.approval_rules) : undefined,
        clearApprovalRules: body.approval_rules === null,
      },
      callContext(req),
    );
    sendData(res, 200, projectDetailJson(project));
  });

  router.delete('/:id', validate('deleteProject'), async (req, res) => {
    await client.deleteProject({ id: String(req.params.id) }, callContext(req));
    res.status(204).end();
  });

  return router;
}
