import { catalogue, eventTypes, serviceOf, type EventType } from './catalogue';
import { messageSchemas, type Describe, type JsonSchema } from './json-schema';
import { defaultNamespace, streamOf, streamSubjectsOf, subjectOf } from './subjects';

/** The version of the event catalogue: the major follows the proto package (`costgov.events.v1`). */
export const catalogueVersion = '1.0.0';

/** Names in the document carry the namespace as a template: `{namespace}` in subjects, upper case in streams. */
const namespaceParameter = '{namespace}';
const streamNamespace = '{NAMESPACE}';
const durableParameter = '{durable}';
const ref = ($ref: string) => ({ $ref });

const consumerSnippet = (type: EventType) =>
  [
    '```ts',
    '// An ES module (top-level await): a .mts file, or .ts in a package with "type": "module".',
    "import { connectEvents } from '@costgov/events';",
    '',
    'const events = await connectEvents({',
    "  servers: process.env.NATS_URL ?? 'nats://127.0.0.1:4222',",
    `  namespace: process.env.EVENT_NAMESPACE ?? '${defaultNamespace}', // the deployment's EVENT_NAMESPACE`,
    '});',
    `await events.subscribe('${type}', {`,
    "  // A new durable first receives every event the stream still holds; startFrom: 'new' skips them.",
    "  durable: 'my-team-service',",
    '  handler: async (data, event) => {',
    '    // data: the decoded payload; event.attributes: ce-id, ce-source, ce-time, ...',
    '  },',
    '});',
    '```',
  ].join('\n');

/**
 * What the NATS user of a consumer may do for libs/events' `subscribe` (and `nats consumer add`) to
 * create or update its durable, pull and settle: the JetStream API subjects on the type's stream.
 */
function consumerPermissions(type: EventType) {
  const stream = streamOf(streamNamespace, type);
  return {
    description: `Allow these to the consumer's NATS user (NATS 2.9 or newer; ${durableParameter} is its durable name). The durable is created, or brought to the subscription's settings, by the consumer itself.`,
    publish: [
      '$JS.API.INFO',
      `$JS.API.STREAM.INFO.${stream}`,
      `$JS.API.CONSUMER.CREATE.${stream}.${durableParameter}.>`,
      `$JS.API.CONSUMER.INFO.${stream}.${durableParameter}`,
      `$JS.API.CONSUMER.MSG.NEXT.${stream}.${durableParameter}`,
      `$JS.ACK.${stream}.${durableParameter}.>`,
    ],
    subscribe: ['_INBOX.>'],
    publishToCreateTheStream: {
      description:
        'Only for a consumer that may start before the producing service ever published: it then creates the stream with the settings under `x-jetstream` of the channel.',
      publish: [`$JS.API.STREAM.CREATE.${stream}`],
    },
  };
}

function channel(type: EventType) {
  const { summary } = catalogue[type];
  return {
    address: subjectOf(namespaceParameter, type),
    title: type,
    summary,
    description: [
      `Stored in the JetStream stream \`${streamOf(streamNamespace, type)}\` (the namespace in upper case), which holds every subject of the producing service (\`${streamSubjectsOf(namespaceParameter, type)}\`).`,
      'Bind a durable pull consumer with explicit acks on that stream, filtered on this subject (see `x-jetstream` of the receive operation).',
    ].join(' '),
    parameters: { namespace: ref('#/components/parameters/namespace') },
    messages: { [type]: ref(`#/components/messages/${type}`) },
    'x-jetstream': {
      stream: streamOf(streamNamespace, type),
      streamSubjects: streamSubjectsOf(namespaceParameter, type),
      storage: 'file',
      retention: 'limits',
      discard: 'old',
      duplicateWindow: 'PT2M',
      limits:
        "Replicas, maximum age and maximum size as the deployment sets them (NATS_STREAM_REPLICAS, NATS_STREAM_MAX_AGE_HOURS: 168 by default, NATS_STREAM_MAX_BYTES; with a size limit, discard is 'new'). The producing service applies them at its start, also to a stream a consumer created first.",
      deduplication: 'Nats-Msg-Id is the CloudEvent id: a re-sent event is stored once within the window.',
    },
  };
}

function operation(type: EventType) {
  const stream = streamOf(streamNamespace, type);
  const filterSubject = subjectOf(namespaceParameter, type);
  return {
    action: 'receive',
    channel: ref(`#/channels/${type}`),
    messages: [ref(`#/channels/${type}/messages/${type}`)],
    title: `Receive ${type}`,
    summary: catalogue[type].summary,
    description: [
      'Consume with a durable pull consumer: ack once the effect is done, nak with a backoff on failure (the',
      'message is redelivered), term a message you cannot decode. Delivery is at least once: dedupe on `ce-id`.',
      'A new durable first receives every event its stream still holds, then the new ones (deliver policy',
      '`all`); `new` starts it at the next event. Creating it takes the rights under `x-jetstream.permissions`.',
      '',
      consumerSnippet(type),
    ].join('\n'),
    'x-jetstream': {
      stream,
      consumer: {
        durable: `${durableParameter}: your service's name (one per effect; replicas sharing it split the work)`,
        type: 'pull',
        ackPolicy: 'explicit',
        deliverPolicy:
          'all: a new durable first receives every retained event (`new` for only the next ones; libs/events startFrom)',
        filterSubject,
      },
      permissions: consumerPermissions(type),
      cli: `nats consumer add ${stream} ${durableParameter} --pull --ack explicit --deliver all --filter ${filterSubject} --max-deliver 10 --wait 30s --defaults`,
    },
  };
}

function message(type: EventType, schemaName: string) {
  const { summary } = catalogue[type];
  return {
    name: type,
    title: type,
    summary,
    contentType: 'application/json',
    headers: {
      allOf: [
        ref('#/components/schemas/CloudEventHeaders'),
        {
          type: 'object',
          properties: {
            'ce-type': { type: 'string', const: type },
            'ce-source': { type: 'string', const: serviceOf(type) },
          },
        },
      ],
    },
    payload: ref(`#/components/schemas/${schemaName}`),
    'x-cloudevents-type': type,
  };
}

const cloudEventHeaders: JsonSchema = {
  type: 'object',
  description:
    'CloudEvents 1.0 attributes in binary content mode (the payload is the event `data`), and W3C trace context.',
  required: ['ce-specversion', 'ce-id', 'ce-source', 'ce-type', 'ce-time', 'content-type'],
  properties: {
    'ce-specversion': { type: 'string', const: '1.0' },
    'ce-id': { type: 'string', description: 'Unique per event; the key to dedupe redeliveries on.' },
    'ce-source': { type: 'string', description: 'The producing service, e.g. `budgets`.' },
    'ce-type': { type: 'string', description: 'The event type: the subject without its namespace.' },
    'ce-time': { type: 'string', format: 'date-time', description: 'When the change happened.' },
    'ce-subject': { type: 'string', description: 'The id of the resource the event is about.' },
    'content-type': { type: 'string', const: 'application/json' },
    traceparent: {
      type: 'string',
      pattern: '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$',
      description: 'W3C trace context of the change that produced the event: continue it in a CONSUMER span.',
    },
    tracestate: { type: 'string' },
    'Nats-Msg-Id': { type: 'string', description: 'Equal to ce-id: JetStream drops a re-sent event.' },
  },
};

/**
 * The AsyncAPI 3.0 document of every event in the catalogue, payload schemas generated from the proto
 * messages; `describe` gives them the proto files' comments (scripts/proto-comments.ts).
 */
export function asyncApiDocument(describe?: Describe) {
  const schemaNameOf = (type: EventType) => catalogue[type].schema.name;
  const payloads = messageSchemas(
    eventTypes.map((type) => catalogue[type].schema),
    '#/components/schemas/',
    describe,
  );
  const byType = <T>(build: (type: EventType) => T) =>
    Object.fromEntries(eventTypes.map((type) => [type, build(type)]));
  return {
    asyncapi: '3.0.0',
    id: 'urn:costgov:events',
    info: {
      title: 'costgov events',
      version: catalogueVersion,
      description: [
        'Every CloudEvent the platform publishes on NATS JetStream, for services of other teams.',
        '',
        `- Names carry the deployment's namespace, \`EVENT_NAMESPACE\` (\`${defaultNamespace}\` unless set): a type's subject is \`{namespace}.<type>\` (the channel parameter \`namespace\`), and each producing service has one stream, \`{NAMESPACE}_<SERVICE>\` (the namespace in upper case), holding \`{namespace}.<service>.>\`. In the default namespace, \`budgets.budget.breached\` is published on \`${subjectOf(defaultNamespace, 'budgets.budget.breached')}\` into the stream \`${streamOf(defaultNamespace, 'budgets.budget.breached')}\`.`,
        '- CloudEvents 1.0 binary mode: attributes in `ce-*` headers, the payload is the proto message of `proto/costgov/events/v1/events.proto` in its proto3 JSON form (lowerCamelCase names, 64-bit integers as strings, every non-optional field written).',
        '- Delivery is at least once: dedupe on `ce-id`.',
        "- A consumer is a durable pull consumer with explicit acks, filtered on the type's subject. A new durable first receives every event its stream still holds (deliver policy `all`; `startFrom: 'new'` in `@costgov/events` starts it at the next event), then keeps its place.",
        "- Rights: the consumer creates or updates its durable itself, so its NATS user needs JetStream API rights on the stream besides pulling and acking: each receive operation lists them under `x-jetstream.permissions` (`{durable}` is the durable's name).",
        '- Versioning: within a major version fields are only added, never renamed, retyped or removed (`buf breaking` checks the proto files in CI); readers must ignore unknown fields. A breaking change is a new type or a new proto package (`v2`).',
        '',
        'The TypeScript package `@costgov/events` subscribes by type with this document’s streams and schemas. It is handed over as a tarball (`npm run pack:libs` in the platform’s repository, then `npm install ./costgov-events-0.1.0.tgz`) and loads as an ES module or from CommonJS; the examples use top-level `await`, so they are ES modules (`.mts` files, or `"type": "module"`). The platform’s docs/integrations.md has the whole walk-through.',
      ].join('\n'),
    },
    defaultContentType: 'application/json',
    servers: {
      nats: {
        host: 'localhost:4222',
        protocol: 'nats',
        description: 'The deployment’s NATS server (`NATS_URL`), with JetStream enabled.',
      },
    },
    channels: byType(channel),
    operations: byType(operation),
    components: {
      parameters: {
        namespace: {
          default: defaultNamespace,
          examples: [defaultNamespace],
          description:
            'The deployment’s subject namespace (`EVENT_NAMESPACE`); stream names carry it in upper case (`{NAMESPACE}`). Test runs use namespaces of their own.',
        },
      },
      messages: byType((type) => message(type, schemaNameOf(type))),
      schemas: { CloudEventHeaders: cloudEventHeaders, ...payloads },
    },
  };
}
