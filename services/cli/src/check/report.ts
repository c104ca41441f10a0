import { table } from '../output';
import type { CheckItem, CheckOutcome } from './gate';
import { rankOf, type Severity } from './severity';

/**
 * The `--json` result, version 1: documented in services/cli/README.md. Fields are only added within
 * a version, never renamed or removed.
 */
export interface CheckReportJson {
  version: 1;
  verdict: 'pass' | 'fail';
  project: { id: string; name: string };
  policy: { fail_on: Severity; max_spend_percentage: number | null; ignore_acknowledged: boolean };
  summary: { violations: number; findings: number; budgets: number; failed: number };
  /** Everything checked, failed ones first; `failed` says which make the gate fail. */
  items: Array<{
    kind: CheckItem['kind'];
    id: string;
    rule: string;
    severity: Severity | null;
    status: string;
    message: string;
    failed: boolean;
    resource: { id: string; type: string } | null;
    percentage_used: number | null;
  }>;
}

/**
 * The `--json` result when the check could not be made (exit 2), also version 1: `verdict` is `error`
 * and `error.message` says why (the stderr line without its prefix).
 */
export interface CheckErrorJson {
  version: 1;
  verdict: 'error';
  /** `id` is null when the command stopped before it knew the project (a usage error). */
  project: { id: string | null };
  error: { message: string };
}

/** Why the check could not be made, as stderr, the reports and the JSON result say it. */
export const couldNotCheckLine = (projectId: string | undefined, reason: string): string =>
  projectId ? `could not check project ${projectId}: ${reason}` : `could not check: ${reason}`;

export function errorJson(projectId: string | undefined, reason: string): CheckErrorJson {
  return {
    version: 1,
    verdict: 'error',
    project: { id: projectId ?? null },
    error: { message: reason },
  };
}

/** Failed items first, then the most severe, then by id, so the output is stable from run to run. */
function ordered(items: readonly CheckItem[]): CheckItem[] {
  const rank = (item: CheckItem) => (item.severity === null ? -1 : rankOf(item.severity));
  return [...items].sort(
    (a, b) =>
      Number(b.failed) - Number(a.failed) ||
      rank(b) - rank(a) ||
      a.kind.localeCompare(b.kind) ||
      a.id.localeCompare(b.id),
  );
}

export function reportJson(outcome: CheckOutcome): CheckReportJson {
  const count = (kind: CheckItem['kind']) => outcome.items.filter((item) => item.kind === kind).length;
  return {
    version: 1,
    verdict: outcome.passed ? 'pass' : 'fail',
    project: outcome.project,
    policy: {
      fail_on: outcome.policy.failOn,
      max_spend_percentage: outcome.policy.maxSpendPercentage ?? null,
      ignore_acknowledged: outcome.policy.ignoreAcknowledged,
    },
    summary: {
      violations: count('violation'),
      findings: count('finding'),
      budgets: count('budget'),
      failed: outcome.items.filter((item) => item.failed).length,
    },
    items: ordered(outcome.items).map((item) => ({
      kind: item.kind,
      id: item.id,
      rule: item.rule,
      severity: item.severity,
      status: item.status,
      message: item.message,
      failed: item.failed,
      resource: item.resource ?? null,
      percentage_used: item.percentageUsed ?? null,
    })),
  };
}

/** A table row's message, cut so the table stays readable in a CI log; the files carry it whole. */
const short = (text: string, max = 100) => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);

const what = (item: CheckItem) => `${item.kind} ${item.rule}`;

/** The one-line verdict a pipeline log ends with. */
export function verdictLine(outcome: CheckOutcome): string {
  const { policy, project } = outcome;
  const failed = outcome.items.filter((item) => item.failed).length;
  const limits = [`severity ${policy.failOn} or above`];
  if (policy.maxSpendPercentage !== undefined)
    limits.push(`budgets at ${policy.maxSpendPercentage} % or more`);
  const subject = `project ${project.name} (${project.id})`;
  return outcome.passed
    ? `PASS: ${subject}: nothing open at ${limits.join(', nor ')} (${outcome.items.length} checked)`
    : `FAIL: ${subject}: ${failed} of ${outcome.items.length} checked at ${limits.join(' or ')}`;
}

/** The failed items as a table (what, severity, id, message), then the verdict. */
export function reportText(outcome: CheckOutcome): string {
  const failed = ordered(outcome.items).filter((item) => item.failed);
  const rows = failed.map((item) => [what(item), item.severity ?? '-', item.id, short(item.message)]);
  const body = rows.length > 0 ? `${table(['FAILED', 'SEVERITY', 'ID', 'MESSAGE'], rows)}\n` : '';
  return `${body}${verdictLine(outcome)}\n`;
}
