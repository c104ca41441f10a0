import { serviceOf } from './catalogue';

/** The namespace the platform publishes under unless EVENT_NAMESPACE says otherwise. */
export const defaultNamespace = 'costgov';

const namespacePattern = /^[A-Za-z0-9_-]+$/;

export function assertNamespace(namespace: string): void {
  if (!namespacePattern.test(namespace)) {
    throw new Error(`Invalid event namespace '${namespace}': expected letters, digits, '_' or '-'.`);
  }
}

/** The NATS subject of an event type: `costgov.budgets.budget.breached`. */
export const subjectOf = (namespace: string, type: string): string => `${namespace}.${type}`;

/** The JetStream stream of the service that produces `type`: `COSTGOV_BUDGETS` holds `costgov.budgets.>`. */
export const streamOf = (namespace: string, type: string): string =>
  `${namespace}_${serviceOf(type)}`.toUpperCase();

/** Every subject the stream of `type`'s service holds. */
export const streamSubjectsOf = (namespace: string, type: string): string =>
  `${namespace}.${serviceOf(type)}.>`;
