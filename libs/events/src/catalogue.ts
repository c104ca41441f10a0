import type { DescMessage, MessageShape } from '@bufbuild/protobuf';
import { events } from '@costgov/contracts';

interface CatalogueEntry {
  /** The proto message of the payload (`proto/costgov/events/v1/events.proto`), JSON-encoded on the wire. */
  schema: DescMessage;
  /** When the event is published, in one sentence. */
  summary: string;
}

/**
 * Every event the platform publishes: its CloudEvents `type` (also its NATS subject after the namespace),
 * its payload message and what it means. The AsyncAPI document is generated from this table and the
 * proto descriptors, typed subscriptions read it, and a test checks it against every producer's outbox
 * writes, so a type joins the catalogue in the change that publishes it.
 */
export const catalogue = {
  'budgets.project.created': { schema: events.ProjectChangedSchema, summary: 'A project was created.' },
  'budgets.project.updated': {
    schema: events.ProjectChangedSchema,
    summary: 'A project was changed; `changedFields` names what changed.',
  },
  'budgets.project.deleted': {
    schema: events.ProjectDeletedSchema,
    summary: 'A project was deleted; owners of its data (violations, scans, findings, costs) purge it.',
  },
  'budgets.budget.created': { schema: events.BudgetChangedSchema, summary: 'A budget was created.' },
  'budgets.budget.updated': {
    schema: events.BudgetChangedSchema,
    summary:
      'A budget was changed (by a user, or its status by the evaluator); `changedFields` names what changed.',
  },
  'budgets.budget.deleted': { schema: events.BudgetChangedSchema, summary: 'A budget was deleted.' },
  'budgets.budget.threshold_crossed': {
    schema: events.BudgetThresholdCrossedSchema,
    summary: 'Spend crossed one of a budget’s thresholds; once per budget, threshold and period.',
  },
  'budgets.budget.breached': {
    schema: events.BudgetThresholdCrossedSchema,
    summary:
      'Spend reached 100 % of a budget in its period (`threshold` is 100); once per budget and period.',
  },
  'identity.key.revoked': {
    schema: events.CredentialRevokedSchema,
    summary: 'An API key or SCIM token was revoked (`kind`: api_key | scim_token).',
  },
  'identity.user.created': { schema: events.UserChangedSchema, summary: 'A SCIM user was provisioned.' },
  'identity.user.updated': { schema: events.UserChangedSchema, summary: 'A SCIM user was changed.' },
  'identity.user.deactivated': {
    schema: events.UserChangedSchema,
    summary: 'A SCIM user was deactivated or deleted; their OAuth tokens stop working.',
  },
  'identity.user.reactivated': { schema: events.UserChangedSchema, summary: 'A SCIM user was reactivated.' },
  'identity.group.created': { schema: events.GroupChangedSchema, summary: 'A SCIM group was created.' },
  'identity.group.updated': {
    schema: events.GroupChangedSchema,
    summary: 'A SCIM group or its membership was changed.',
  },
  'identity.group.deleted': { schema: events.GroupChangedSchema, summary: 'A SCIM group was deleted.' },
  'costs.data.ingested': {
    schema: events.CostDataIngestedSchema,
    summary: 'A FOCUS file was stored for a connection, replacing the billing periods it covers.',
  },
  'costs.connection.created': {
    schema: events.ConnectionChangedSchema,
    summary: 'A cloud connection was created.',
  },
  'costs.connection.updated': {
    schema: events.ConnectionChangedSchema,
    summary: 'A cloud connection was changed.',
  },
  'costs.connection.deleted': {
    schema: events.ConnectionChangedSchema,
    summary: 'A cloud connection was deleted with its cost data.',
  },
  'violations.violation.created': {
    schema: events.ViolationChangedSchema,
    summary: 'A violation was opened for a crossed budget threshold.',
  },
  'violations.violation.acknowledged': {
    schema: events.ViolationChangedSchema,
    summary: 'A violation was acknowledged.',
  },
  'violations.violation.resolved': {
    schema: events.ViolationChangedSchema,
    summary: 'A violation was resolved.',
  },
  'violations.violation.deleted': {
    schema: events.ViolationChangedSchema,
    summary:
      'A violation was removed with its budget (`status` is `deleted`, `previousStatus` the one it had).',
  },
  'scanner.scan.requested': {
    schema: events.ScanRequestedSchema,
    summary: 'A scan was accepted; the scan workers share this work queue.',
  },
  'scanner.scan_shard.requested': {
    schema: events.ScanShardRequestedSchema,
    summary: "One shard of a planned scan, on the scan workers' work queue (any worker takes any shard).",
  },
  'scanner.scan_merge.requested': {
    schema: events.ScanMergeRequestedSchema,
    summary:
      'Every shard of a scan is stored: a scan worker merges them and completes the scan (same queue).',
  },
  'scanner.scan.completed': { schema: events.ScanFinishedSchema, summary: 'A scan finished successfully.' },
  'scanner.scan.failed': {
    schema: events.ScanFinishedSchema,
    summary: 'A scan failed (`error` says why); its credits were refunded.',
  },
  'scanner.finding.created': {
    schema: events.FindingChangedSchema,
    summary: 'A scan found a new cost problem.',
  },
  'scanner.finding.updated': {
    schema: events.FindingChangedSchema,
    summary: 'A finding was changed (seen again, or its status set).',
  },
  'scanner.finding.resolved': {
    schema: events.FindingChangedSchema,
    summary: 'A finding was resolved (no longer seen, or resolved by a user).',
  },
} as const satisfies Record<string, CatalogueEntry>;

export type Catalogue = typeof catalogue;
export type EventType = keyof Catalogue;
/** The decoded payload of an event type, e.g. `events.BudgetThresholdCrossed` for `budgets.budget.breached`. */
export type PayloadOf<T extends EventType> = MessageShape<Catalogue[T]['schema']>;

export const eventTypes = Object.keys(catalogue) as EventType[];

export const isEventType = (type: string): type is EventType => Object.hasOwn(catalogue, type);

/** The producing service: the first token of the type, which names the stream. */
export const serviceOf = (type: string): string => type.split('.', 1)[0] ?? '';
