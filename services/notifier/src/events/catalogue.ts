import { catalogue, eventTypes, type EventType } from '@costgov/events';

/**
 * The public event catalogue (libs/events, generated into the AsyncAPI document), each type with the
 * name of its payload message. Every payload carries `team_id`, which decides whose webhooks receive it.
 */
export const publicEventTypes: Readonly<Record<EventType, string>> = Object.fromEntries(
  eventTypes.map((type) => [type, catalogue[type].schema.name]),
) as Record<EventType, string>;

export type PublicEventType = EventType;

/**
 * Events never sent to webhooks, and why: `scanner.scan.requested` and the shard and merge requests are
 * the scan workers' internal work queue (a request's outcome is `scanner.scan.completed` or `failed`,
 * which are delivered).
 */
export const internalEventTypes: readonly PublicEventType[] = [
  'scanner.scan.requested',
  'scanner.scan_shard.requested',
  'scanner.scan_merge.requested',
];

/** The event types a webhook can subscribe to, in catalogue order. */
export const deliverableEventTypes: readonly string[] = Object.keys(publicEventTypes).filter(
  (type) => !internalEventTypes.includes(type as PublicEventType),
);

/** The producing services (first token of each type): one bus subscription each. */
export const producingServices: readonly string[] = [
  ...new Set(deliverableEventTypes.map((type) => type.split('.', 1)[0]!)),
];

const deliverable = new Set(deliverableEventTypes);

export const isDeliverable = (type: string): boolean => deliverable.has(type);

/**
 * Whether a webhook's event pattern covers a type: `*` covers all, `violations.*` or
 * `budgets.budget.*` a prefix of whole tokens, anything else the exact type.
 */
export function patternMatches(pattern: string, type: string): boolean {
  if (pattern === '*') return true;
  if (pattern.endsWith('.*')) return type.startsWith(pattern.slice(0, -1));
  return pattern === type;
}

export const patternsMatch = (patterns: readonly string[], type: string): boolean =>
  patterns.some((pattern) => patternMatches(pattern, type));

/** Why a pattern is refused, or undefined when it is a known type or a wildcard that matches one. */
export function patternProblem(pattern: string): string | undefined {
  if (pattern === '*') return undefined;
  if (pattern.endsWith('.*')) {
    const prefix = pattern.slice(0, -2);
    if (!/^[a-z0-9_]+(\.[a-z0-9_]+)*$/.test(prefix))
      return `'${pattern}' is not a wildcard of whole tokens (e.g. 'violations.*', 'budgets.budget.*')`;
    if (!deliverableEventTypes.some((type) => patternMatches(pattern, type)))
      return `'${pattern}' matches no deliverable event type`;
    return undefined;
  }
  if (deliverable.has(pattern)) return undefined;
  if (internalEventTypes.includes(pattern as PublicEventType))
    return `'${pattern}' is internal and not delivered to webhooks`;
  return `'${pattern}' is not a known event type or wildcard ('*', 'violations.*', 'budgets.budget.*')`;
}
