import { charLength, textProblem, Violations } from '@costgov/errors';
import { looksLikeId } from '@costgov/ids';

export const projectStatuses = ['active', 'archived'] as const;
export type ProjectStatus = (typeof projectStatuses)[number];

export interface ApprovalRules {
  /** null: no amount limit, every change needs approval. */
  requireApprovalAbove: number | null;
  approvers: string[];
}

export const maxNameLength = 200;
export const maxConnections = 100;
export const minApprovers = 1;
export const maxApprovers = 50;
export const maxApproverIdLength = 200;

/**
 * Whether `value` is acceptable text of 1..max characters (code points, so an emoji counts as one),
 * recording a violation on `field` when it is not. The gateway checks the same through the OpenAPI
 * document; this holds for every other caller of the service.
 */
function checkText(violations: Violations, field: string, value: string, max: number, what: string): boolean {
  const problem = textProblem(value);
  if (problem) {
    violations.add(field, problem);
    return false;
  }
  const ok = value.trim().length >= 1 && charLength(value) <= max;
  violations.check(ok, field, `must be ${what} of 1 to ${max} characters, not all blank`);
  return ok;
}

export function checkName(violations: Violations, name: string): string {
  const trimmed = name.trim();
  checkText(violations, 'name', trimmed, maxNameLength, 'a name');
  return trimmed;
}

export function checkConnectionIds(violations: Violations, ids: string[]): string[] {
  violations.check(
    ids.length <= maxConnections,
    'connection_ids',
    `must have at most ${maxConnections} items`,
  );
  ids.forEach((id, index) => {
    const field = `connection_ids[${index}]`;
    if (textProblem(id)) violations.add(field, 'is not a connection id (con_...)');
    else violations.check(looksLikeId('connection', id), field, `'${id}' is not a connection id (con_...)`);
  });
  return [...new Set(ids)];
}

/**
 * The rules' own shape: an amount >= 0 or none (no amount limit: every change needs approval), and
 * 1..50 approver ids. Whether the approvers are users of the team is asked of identity afterwards.
 */
export function checkApprovalRules(
  violations: Violations,
  rules: { requireApprovalAbove?: number | null; approvers: string[] },
): ApprovalRules {
  const above = rules.requireApprovalAbove ?? null;
  violations.check(
    above === null || (Number.isFinite(above) && above >= 0),
    'approval_rules.require_approval_above',
    'must be a number >= 0, or null for no amount limit',
  );
  violations.check(
    rules.approvers.length >= minApprovers && rules.approvers.length <= maxApprovers,
    'approval_rules.approvers',
    `must name ${minApprovers} to ${maxApprovers} approvers`,
  );
  rules.approvers.forEach((approver, index) =>
    checkText(violations, `approval_rules.approvers[${index}]`, approver, maxApproverIdLength, 'a user id'),
  );
  return { requireApprovalAbove: above, approvers: [...new Set(rules.approvers)] };
}

/** Approver ids of an acceptable shape: the ones worth asking identity about. */
export const wellFormedApprovers = (approvers: string[]): string[] =>
  approvers.filter(
    (approver) =>
      !textProblem(approver) && approver.trim().length >= 1 && charLength(approver) <= maxApproverIdLength,
  );

/**
 * Records each well-formed approver that is not among `active` (identity's answer), by its index in
 * the request; malformed ones already have their violation.
 */
export function checkApproversKnown(violations: Violations, approvers: string[], active: Set<string>): void {
  const asked = new Set(wellFormedApprovers(approvers));
  approvers.forEach((approver, index) =>
    violations.check(
      !asked.has(approver) || active.has(approver),
      `approval_rules.approvers[${index}]`,
      `'${approver}' is not an active user of this team`,
    ),
  );
}

/** Records each well-formed connection id that costs reported missing (`missing`), by its index. */
export function checkConnectionsKnown(violations: Violations, ids: string[], missing: Set<string>): void {
  ids.forEach((id, index) =>
    violations.check(
      !(looksLikeId('connection', id) && missing.has(id)),
      `connection_ids[${index}]`,
      `'${id}' is not a connection of this team`,
    ),
  );
}

export function checkStatus(violations: Violations, status: string): ProjectStatus {
  violations.check(
    (projectStatuses as readonly string[]).includes(status),
    'status',
    `must be one of ${projectStatuses.join(', ')}`,
  );
  return status as ProjectStatus;
}
