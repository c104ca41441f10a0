import { Violations } from '@costgov/errors';
import { looksLikeId } from '@costgov/ids';

export const projectStatuses = ['active', 'archived'] as const;
export type ProjectStatus = (typeof projectStatuses)[number];

export interface ApprovalRules {
  requireApprovalAbove: number;
  approvers: string[];
}

export const maxConnections = 100;
export const maxApprovers = 50;

export function checkName(violations: Violations, name: string): string {
  const trimmed = name.trim();
  violations.check(
    trimmed.length >= 1 && trimmed.length <= 200,
    'name',
    'must be 1 to 200 characters, not all blank',
  );
  return trimmed;
}

export function checkConnectionIds(violations: Violations, ids: string[]): string[] {
  violations.check(
    ids.length <= maxConnections,
    'connection_ids',
    `must have at most ${maxConnections} items`,
  );
  ids.forEach((id, index) =>
    violations.check(
      looksLikeId('connection', id),
      `connection_ids[${index}]`,
      `'${id}' is not a connection id (con_...)`,
    ),
  );
  return [...new Set(ids)];
}

export function checkApprovalRules(
  violations: Violations,
  rules: { requireApprovalAbove?: number; approvers: string[] },
): ApprovalRules {
  const above = rules.requireApprovalAbove;
  violations.check(
    above !== undefined && Number.isFinite(above) && above >= 0,
    'approval_rules.require_approval_above',
    'is required and must be a number >= 0',
  );
  violations.check(
    rules.approvers.length >= 1,
    'approval_rules.approvers',
    'must name at least one approver',
  );
  violations.check(
    rules.approvers.length <= maxApprovers,
    'approval_rules.approvers',
    `must have at most ${maxApprovers} items`,
  );
  rules.approvers.forEach((approver, index) =>
    violations.check(
      approver.trim().length >= 1 && approver.length <= 200,
      `approval_rules.approvers[${index}]`,
      'must be a user id of 1 to 200 characters',
    ),
  );
  return { requireApprovalAbove: above ?? 0, approvers: [...new Set(rules.approvers)] };
}

export function checkStatus(violations: Violations, status: string): ProjectStatus {
  violations.check(
    (projectStatuses as readonly string[]).includes(status),
    'status',
    `must be one of ${projectStatuses.join(', ')}`,
  );
  return status as ProjectStatus;
}
