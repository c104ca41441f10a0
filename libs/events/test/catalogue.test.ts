import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { asyncApiDocument } from '../src/asyncapi';
import { catalogue, eventTypes } from '../src/catalogue';
import { streamOf, subjectOf } from '../src/subjects';
import { protoComments } from '../scripts/proto-comments';

const repo = path.resolve(__dirname, '../../..');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) return name === 'node_modules' ? [] : sourceFiles(file);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [file] : [];
  });
}

interface Publication {
  where: string;
  types: string[];
  message: string;
}

/** The string-literal union a template's `${name}` takes: `name: 'a' | 'b'`, or `name: T` with `type T = 'a' | 'b'`. */
function unionOf(source: string, expression: string): string[] {
  const literals = (text: string) => [...text.matchAll(/'([a-z_]+)'/g)].map((m) => m[1]!);
  const inline = literals(expression);
  if (inline.length > 0) return inline; // `${a === b ? 'completed' : 'failed'}`
  const annotation = new RegExp(`\\b${expression}\\??:\\s*((?:'[a-z_]+'\\s*\\|?\\s*)+|[A-Z]\\w*)`).exec(
    source,
  );
  if (!annotation) return [];
  const named = annotation[1]!;
  if (named.startsWith("'")) return literals(named);
  const alias = new RegExp(`type ${named} =\\s*((?:'[a-z_]+'\\s*\\|?\\s*)+)`).exec(source);
  return alias ? literals(alias[1]!) : [];
}

/** Every outbox write of the services: the types it may publish and the payload message it writes. */
function publications(): Publication[] {
  const found: Publication[] = [];
  const services = path.join(repo, 'services');
  for (const file of readdirSync(services).flatMap((s) => {
    const src = path.join(services, s, 'src');
    return statSync(src, { throwIfNoEntry: false })?.isDirectory() ? sourceFiles(src) : [];
  })) {
    const source = readFileSync(file, 'utf8');
    const where = path.relative(repo, file);
    // One event (addMessage) or a batch of them (addMessages), each written with its type and schema.
    const calls = source.split(/\.addMessages?\(/).slice(1);
    for (const call of calls) {
      const body = call.slice(0, 400);
      const type = /type:\s*(?:'([^']+)'|`([^`$]*)\$\{([^}]+)\}`)/.exec(body);
      const schema = /schema:\s*events\.(\w+)Schema/.exec(body);
      if (!type || !schema)
        throw new Error(`Cannot read the event type or schema of an outbox write in ${where}.`);
      const types = type[1] ? [type[1]] : unionOf(source, type[3]!.trim()).map((verb) => `${type[2]}${verb}`);
      if (types.length === 0)
        throw new Error(`Cannot expand the event type \`${type[2]}\${${type[3]}}\` in ${where}.`);
      found.push({ where, types, message: schema[1]! });
    }
    // Events written without a payload message would escape this check.
    if (/\boutbox\.add(All)?\(/.test(source))
      throw new Error(`${where} publishes with outbox.add or addAll: use addMessage or addMessages.`);
  }
  return found;
}

describe('the event catalogue', () => {
  const published = publications();

  it('finds the outbox writes of the producers (the check is not vacuous)', () => {
    expect(published.length).toBeGreaterThanOrEqual(10);
    expect(published.flatMap((p) => p.types)).toContain('budgets.budget.breached');
    expect(published.flatMap((p) => p.types)).toContain('scanner.scan.completed');
  });

  it('lists every type a producer publishes, with the payload message it writes', () => {
    const wrong = published.flatMap(({ where, types, message }) =>
      types
        .filter(
          (type) => !(type in catalogue) || catalogue[type as keyof typeof catalogue].schema.name !== message,
        )
        .map((type) => `${where}: ${type} (${message})`),
    );
    expect(wrong).toEqual([]);
  });

  it('lists only types some producer publishes', () => {
    const produced = new Set(published.flatMap((p) => p.types));
    expect(eventTypes.filter((type) => !produced.has(type))).toEqual([]);
  });

  it('names each type after its producing service, in lower-case tokens (a valid NATS subject)', () => {
    for (const type of eventTypes)
      expect(type).toMatch(/^(budgets|identity|costs|violations|scanner)\.[a-z_]+\.[a-z_]+$/);
  });
});

describe('the AsyncAPI document', () => {
  it('is committed as generated (npm run generate)', () => {
    const committed = JSON.parse(readFileSync(path.join(__dirname, '../asyncapi.json'), 'utf8')) as unknown;
    expect(committed).toEqual(asyncApiDocument(protoComments()));
  });

  it('carries the comments of the proto files as descriptions', () => {
    const { schemas } = asyncApiDocument(protoComments()).components as unknown as {
      schemas: Record<string, { description?: string; properties: Record<string, { description?: string }> }>;
    };
    expect(schemas.ScanFinished?.description).toBe('scanner.scan.completed, scanner.scan.failed');
    expect(schemas.ScanFinished?.properties.status?.description).toBe('completed | failed');
    expect(schemas.BudgetThresholdCrossed?.properties.periodStart?.description).toMatch(/YYYY-MM-DD/);
  });

  it('has a channel, a receive operation and a message per type, on the stream of its service', () => {
    const document = asyncApiDocument();
    expect(Object.keys(document.channels)).toEqual(eventTypes);
    expect(document.channels['budgets.budget.breached']).toMatchObject({
      address: '{namespace}.budgets.budget.breached',
      'x-jetstream': { stream: '{NAMESPACE}_BUDGETS', streamSubjects: '{namespace}.budgets.>' },
    });
    expect(document.operations['scanner.scan.completed']).toMatchObject({
      action: 'receive',
      channel: { $ref: '#/channels/scanner.scan.completed' },
      'x-jetstream': {
        stream: '{NAMESPACE}_SCANNER',
        consumer: { filterSubject: '{namespace}.scanner.scan.completed' },
        cli: expect.stringMatching(
          /^nats consumer add \{NAMESPACE\}_SCANNER \{durable\} .*--filter \{namespace\}\.scanner\.scan\.completed /,
        ),
      },
    });
    expect(document.components.messages['budgets.budget.breached']).toMatchObject({
      payload: { $ref: '#/components/schemas/BudgetThresholdCrossed' },
    });
  });

  it('names streams and subjects with the namespace as a template, never the default one', () => {
    const { channels, operations } = asyncApiDocument();
    const named = JSON.stringify({ channels, operations });
    expect(named.match(/costgov\.|COSTGOV_/g)).toBeNull();
    // As libs/events subscribes: the template filled in gives its stream and subject.
    const fill = (template: string) =>
      template.replaceAll('{namespace}', 'acme').replaceAll('{NAMESPACE}', 'ACME');
    for (const type of eventTypes) {
      expect(fill(channels[type]!.address)).toBe(subjectOf('acme', type));
      expect(fill(channels[type]!['x-jetstream'].stream)).toBe(streamOf('acme', type));
    }
  });

  it('says what a consumer must be allowed on its stream, and that a new durable replays it', () => {
    const document = asyncApiDocument();
    const { permissions } = document.operations['budgets.budget.breached']!['x-jetstream'];
    expect(permissions.publish).toEqual([
      '$JS.API.INFO',
      '$JS.API.STREAM.INFO.{NAMESPACE}_BUDGETS',
      '$JS.API.CONSUMER.CREATE.{NAMESPACE}_BUDGETS.{durable}.>',
      '$JS.API.CONSUMER.INFO.{NAMESPACE}_BUDGETS.{durable}',
      '$JS.API.CONSUMER.MSG.NEXT.{NAMESPACE}_BUDGETS.{durable}',
      '$JS.ACK.{NAMESPACE}_BUDGETS.{durable}.>',
    ]);
    expect(permissions.subscribe).toEqual(['_INBOX.>']);
    expect(document.info.description).toMatch(/x-jetstream\.permissions/);
    expect(document.info.description).toMatch(
      /A new durable first receives every event its stream still holds/,
    );
    expect(document.info.description).toMatch(/ES modules/);
  });

  it('maps proto fields to their proto3 JSON form', () => {
    const { schemas } = asyncApiDocument().components as { schemas: Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(schemas.CostDataIngested.properties).toMatchObject({
      connectionId: { type: 'string' },
      rows: { type: 'string', format: 'int64' },
      billingPeriods: { type: 'array', items: { type: 'string' } },
    });
    expect(schemas.ScanFinished.properties.findingsCount).toMatchObject({ type: 'integer', format: 'int32' });
    expect(schemas.BudgetThresholdCrossed.properties.threshold).toEqual({ type: 'number', format: 'double' });
    expect(schemas.UserChanged.properties.active).toEqual({ type: 'boolean' });
    // `optional` fields are written only when set; the others always.
    expect(schemas.FindingChanged.required).not.toContain('estimatedMonthlySavings');
    expect(schemas.FindingChanged.required).toContain('findingId');
  });
});
