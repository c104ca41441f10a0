import type { components } from '@costgov/client';
import { answer, type GuardClient } from '../api';
import { atLeast, type Severity } from './severity';

type Violation = components['schemas']['Violation'];
type Finding = components['schemas']['Finding'];
type Budget = components['schemas']['Budget'];
type PageMeta = components['schemas']['PageMeta'];

/** What makes the gate fail. */
export interface CheckPolicy {
  /** Open violations and findings at or above this severity fail (see `severities`). */
  failOn: Severity;
  /** A budget (not archived) whose `percentage_used` is at or above this fails; absent, budgets are not read. */
  maxSpendPercentage?: number;
  /** Acknowledged violations count like open ones unless this is set. */
  ignoreAcknowledged: boolean;
}

/** One thing the gate looked at: a violation, a finding, or a budget's spend. */
export interface CheckItem {
  kind: 'violation' | 'finding' | 'budget';
  id: string;
  /** The violation's type, the finding's rule id, or `max-spend-percentage` for a budget. */
  rule: string;
  /** `null` for a budget, which has no severity. */
  severity: Severity | null;
  status: string;
  message: string;
  /** Whether this item makes the gate fail. */
  failed: boolean;
  /** Findings: the affected cloud resource. */
  resource?: { id: string; type: string };
  /** Budgets: the share of the amount spent in the current period. */
  percentageUsed?: number;
}

export interface CheckOutcome {
  project: { id: string; name: string };
  policy: CheckPolicy;
  items: CheckItem[];
  passed: boolean;
}

export const maxSpendRule = 'max-spend-percentage';

/** Every item of a paged list, 100 at a time, so a large project is checked in full. */
async function everyPage<T>(page: (number: number) => Promise<{ data: T[]; meta: PageMeta }>): Promise<T[]> {
  const all: T[] = [];
  for (let number = 1; ; number++) {
    const { data, meta } = await page(number);
    all.push(...data);
    if (data.length === 0 || number >= meta.total_pages) return all;
  }
}

const perPage = 100;

/**
 * Reads the project, its open (and acknowledged) violations, its open findings and, with a spend
 * limit, its budgets, and judges them by the policy. A project that does not exist (or is another
 * team's) is the API's 404, thrown like any refusal: the caller reports that it could not check.
 */
export async function checkProject(
  client: GuardClient,
  projectId: string,
  policy: CheckPolicy,
): Promise<CheckOutcome> {
  const project = await answer(
    client.GET('/v1/guard/projects/{id}', { params: { path: { id: projectId } } }),
  );

  const statuses: Violation['status'][] = policy.ignoreAcknowledged ? ['open'] : ['open', 'acknowledged'];
  const violations: Violation[] = [];
  for (const status of statuses)
    violations.push(
      ...(await everyPage((page) =>
        answer(
          client.GET('/v1/guard/violations', {
            params: {
              query: { project_id: projectId, status, sort: '-severity', page, per_page: perPage },
            },
          }),
        ),
      )),
    );
  const findings: Finding[] = await everyPage((page) =>
    answer(
      client.GET('/v1/guard/findings', {
        params: { query: { project_id: projectId, status: 'open', page, per_page: perPage } },
      }),
    ),
  );
  const budgets: Budget[] =
    policy.maxSpendPercentage === undefined
      ? []
      : (
          await everyPage((page) =>
            answer(
              client.GET('/v1/guard/budgets', {
                params: { query: { project_id: projectId, page, per_page: perPage } },
              }),
            ),
          )
        ).filter((budget) => budget.status !== 'archived');

  const items: CheckItem[] = [
    ...violations.map((v) => ({
      kind: 'violation' as const,
      id: v.id,
      rule: v.type,
      severity: v.severity,
      status: v.status,
      message: v.message,
      failed: atLeast(v.severity, policy.failOn),
    })),
    ...findings.map((f) => ({
      kind: 'finding' as const,
      id: f.id,
      rule: f.rule_id,
      severity: f.severity,
      status: f.status,
      message: `${f.title} (${f.resource_type} ${f.resource_id})`,
      failed: atLeast(f.severity, policy.failOn),
      resource: { id: f.resource_id, type: f.resource_type },
    })),
    ...budgets.map((b) => ({
      kind: 'budget' as const,
      id: b.id,
      rule: maxSpendRule,
      severity: null,
      status: b.status,
      message: `Budget '${b.name}' has used ${b.percentage_used} % of ${b.amount} ${b.currency} this ${b.period} period (limit ${policy.maxSpendPercentage} %)`,
      failed: b.percentage_used >= policy.maxSpendPercentage!,
      percentageUsed: b.percentage_used,
    })),
  ];
  return {
    project: { id: project.data.id, name: project.data.name },
    policy,
    items,
    passed: items.every((item) => !item.failed),
  };
}
