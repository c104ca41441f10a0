import type { components } from '@costgov/client';
import { answer, everyItem, type GuardClient } from '../api';
import { atLeast, isKnownSeverity, severities, type Severity } from './severity';

type Violation = components['schemas']['Violation'];
type Finding = components['schemas']['Finding'];
type Budget = components['schemas']['Budget'];

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

/**
 * Whether an item at `severity` fails the policy. A severity not on the scale (the API's field is a
 * plain string, and a newer server may rate with a word this CLI does not know) is thrown, naming the
 * item and the value: the caller reports that it could not check (exit 2) rather than passing it.
 */
export function failsPolicy(
  item: { kind: 'violation' | 'finding'; id: string; severity: string },
  failOn: Severity,
): boolean {
  if (!isKnownSeverity(item.severity))
    throw new Error(
      `${item.kind} ${item.id} has severity '${item.severity}', which is not on the scale this costgov knows (${severities.join(', ')}); cannot judge it: update the CLI`,
    );
  return atLeast(item.severity, failOn);
}

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
      ...(await everyItem(client, '/v1/guard/violations', {
        query: { project_id: projectId, status, sort: '-severity' },
      })),
    );
  const findings: Finding[] = await everyItem(client, '/v1/guard/findings', {
    query: { project_id: projectId, status: 'open' },
  });
  const budgets: Budget[] =
    policy.maxSpendPercentage === undefined
      ? []
      : (await everyItem(client, '/v1/guard/budgets', { query: { project_id: projectId } })).filter(
          (budget) => budget.status !== 'archived',
        );

  const items: CheckItem[] = [
    ...violations.map((v) => ({
      kind: 'violation' as const,
      id: v.id,
      rule: v.type,
      severity: v.severity,
      status: v.status,
      message: v.message,
      failed: failsPolicy({ kind: 'violation', id: v.id, severity: v.severity }, policy.failOn),
    })),
    ...findings.map((f) => ({
      kind: 'finding' as const,
      id: f.id,
      rule: f.rule_id,
      severity: f.severity,
      status: f.status,
      message: `${f.title} (${f.resource_type} ${f.resource_id})`,
      failed: failsPolicy({ kind: 'finding', id: f.id, severity: f.severity }, policy.failOn),
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
