/** A CloudEvents 1.0 envelope with a JSON payload. */
export interface CloudEvent<T = unknown> {
  specversion: '1.0';
  id: string;
  /** The producing service, e.g. `budgets`. */
  source: string;
  /** `<service>.<entity>.<verb>`, producing service first, e.g. `budgets.project.deleted`. */
  type: string;
  /** The resource the event is about, usually its id. */
  subject?: string;
  time: string;
  datacontenttype: 'application/json';
  data: T;
  /** W3C trace context of the change that produced the event. */
  traceparent?: string;
  tracestate?: string;
}

/** An event as it travels: subject, headers and body (binary content mode). */
export interface WireMessage {
  subject: string;
  headers: Record<string, string>;
  body: string;
}

export const defaultNamespace = 'costgov';

// Lower-case tokens only, so a type is always a valid NATS subject and stream names derive from it.
const typePattern = /^[a-z0-9_-]+(\.[a-z0-9_-]+)+$/;
const namespacePattern = /^[A-Za-z0-9_-]+$/;

export function assertEventType(type: string): void {
  if (!typePattern.test(type)) {
    throw new Error(
      `Invalid event type '${type}': expected dot-separated lower-case tokens, service first (e.g. 'budgets.project.deleted').`,
    );
  }
}

export function assertNamespace(namespace: string): void {
  if (!namespacePattern.test(namespace)) {
    throw new Error(`Invalid event namespace '${namespace}': expected letters, digits, '_' or '-'.`);
  }
}

/** The producing service: the first token of an event type or type pattern. */
export function serviceOf(type: string): string {
  return type.split('.', 1)[0] ?? '';
}

// The CloudEvents SDK has no NATS binding, so the binary-mode mapping to headers is written here.
export function toWire(event: CloudEvent, namespace: string): WireMessage {
  const headers: Record<string, string> = {
    'ce-specversion': event.specversion,
    'ce-id': event.id,
    'ce-source': event.source,
    'ce-type': event.type,
    'ce-time': event.time,
    'content-type': event.datacontenttype,
  };
  if (event.subject !== undefined) headers['ce-subject'] = event.subject;
  if (event.traceparent) headers.traceparent = event.traceparent;
  if (event.tracestate) headers.tracestate = event.tracestate;
  return { subject: `${namespace}.${event.type}`, headers, body: JSON.stringify(event.data ?? null) };
}

/** Reads an event back; header names are matched case-insensitively. Throws on a malformed message. */
export function fromWire(headers: Record<string, string>, body: string): CloudEvent {
  const lower = new Map(Object.entries(headers).map(([key, value]) => [key.toLowerCase(), value]));
  const required = (name: string): string => {
    const value = lower.get(name);
    if (!value) throw new Error(`Malformed event: header '${name}' is missing.`);
    return value;
  };
  if (required('ce-specversion') !== '1.0')
    throw new Error(`Malformed event: ce-specversion '${lower.get('ce-specversion')}' is not 1.0.`);
  const event: CloudEvent = {
    specversion: '1.0',
    id: required('ce-id'),
    source: required('ce-source'),
    type: required('ce-type'),
    time: required('ce-time'),
    datacontenttype: 'application/json',
    data: JSON.parse(body) as unknown,
  };
  const subject = lower.get('ce-subject');
  if (subject !== undefined) event.subject = subject;
  const traceparent = lower.get('traceparent');
  if (traceparent) event.traceparent = traceparent;
  const tracestate = lower.get('tracestate');
  if (tracestate) event.tracestate = tracestate;
  return event;
}
