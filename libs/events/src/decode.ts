import { fromJson, type JsonValue } from '@bufbuild/protobuf';
import { catalogue, type EventType, type PayloadOf } from './catalogue';

/** The CloudEvents 1.0 attributes of a received event, read from its `ce-*` headers. */
export interface CloudEventAttributes<T extends EventType = EventType> {
  specversion: '1.0';
  id: string;
  /** The producing service, e.g. `budgets`. */
  source: string;
  type: T;
  /** The id of the resource the event is about. */
  subject?: string;
  time: string;
  datacontenttype: string;
  /** W3C trace context of the change that produced the event. */
  traceparent?: string;
  tracestate?: string;
}

/** A message that can never be handled (no CloudEvent, another type, a payload that is not the message). */
export class UndecodableEventError extends Error {
  override name = 'UndecodableEventError';
}

/**
 * Reads a message of `type` in CloudEvents binary mode: attributes from the headers (names matched
 * case-insensitively), the payload as the type's proto message. Fields a newer producer added are
 * ignored. Throws UndecodableEventError.
 */
export function decodeEvent<T extends EventType>(
  type: T,
  headers: Iterable<[string, string]>,
  body: string,
): { data: PayloadOf<T>; attributes: CloudEventAttributes<T> } {
  const lower = new Map([...headers].map(([key, value]) => [key.toLowerCase(), value]));
  const required = (name: string): string => {
    const value = lower.get(name);
    if (!value) throw new UndecodableEventError(`Header '${name}' is missing.`);
    return value;
  };
  if (required('ce-specversion') !== '1.0') {
    throw new UndecodableEventError(`ce-specversion '${lower.get('ce-specversion')}' is not 1.0.`);
  }
  const got = required('ce-type');
  if (got !== type) throw new UndecodableEventError(`ce-type '${got}' is not the subscribed '${type}'.`);
  const attributes: CloudEventAttributes<T> = {
    specversion: '1.0',
    id: required('ce-id'),
    source: required('ce-source'),
    type,
    time: required('ce-time'),
    datacontenttype: lower.get('content-type') ?? 'application/json',
  };
  for (const [header, key] of [
    ['ce-subject', 'subject'],
    ['traceparent', 'traceparent'],
    ['tracestate', 'tracestate'],
  ] as const) {
    const value = lower.get(header);
    if (value) attributes[key] = value;
  }
  let json: JsonValue;
  try {
    json = JSON.parse(body) as JsonValue;
  } catch (error) {
    throw new UndecodableEventError(`The payload is not JSON: ${(error as Error).message}`, { cause: error });
  }
  try {
    const data = fromJson(catalogue[type].schema, json, { ignoreUnknownFields: true }) as PayloadOf<T>;
    return { data, attributes };
  } catch (error) {
    throw new UndecodableEventError(
      `The payload is not a ${catalogue[type].schema.typeName}: ${(error as Error).message}`,
      { cause: error },
    );
  }
}
