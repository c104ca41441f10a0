import { describe, expect, it } from 'vitest';
import { create, createFileRegistry, fromBinary, toBinary } from '@bufbuild/protobuf';
import {
  FieldDescriptorProto_Label as Label,
  FieldDescriptorProto_Type as Type,
  FieldOptions_JSType as JSType,
  FileDescriptorProtoSchema,
  file_google_protobuf_timestamp,
  timestampFromDate,
} from '@bufbuild/protobuf/wkt';
import { budgets, identity, notifier } from '@costgov/contracts';
import { messageWriter } from './message-writer';

/**
 * A message with every kind of field the writer treats differently, declared here so that each kind is
 * covered whether or not a contract uses it yet (maps of messages, repeated 64-bit, jstype, recursion):
 *
 *   message Sample {
 *     string name = 1;             int64 count = 2;          int64 count_text = 3 [jstype = JS_STRING];
 *     optional double ratio = 4;   google.protobuf.Timestamp at = 5;
 *     repeated google.protobuf.Timestamp times = 6;          repeated int64 sizes = 7;
 *     map<string, Sample> children = 8;                      map<string, int64> counts = 9;
 *     repeated Sample items = 10;  oneof choice { string text = 11; Sample nested = 12; }
 *     Level level = 13;            // enum Level { LEVEL_UNSPECIFIED = 0; LEVEL_HIGH = 1; }
 *   }
 */
const sampleFile = create(FileDescriptorProtoSchema, {
  name: 'writer_test.proto',
  package: 'test',
  syntax: 'proto3',
  dependency: ['google/protobuf/timestamp.proto'],
  enumType: [
    {
      name: 'Level',
      value: [
        { name: 'LEVEL_UNSPECIFIED', number: 0 },
        { name: 'LEVEL_HIGH', number: 1 },
      ],
    },
  ],
  messageType: [
    {
      name: 'Sample',
      field: [
        { name: 'name', number: 1, type: Type.STRING },
        { name: 'count', number: 2, type: Type.INT64 },
        { name: 'count_text', number: 3, type: Type.INT64, options: { jstype: JSType.JS_STRING } },
        { name: 'ratio', number: 4, type: Type.DOUBLE, oneofIndex: 1, proto3Optional: true },
        { name: 'at', number: 5, type: Type.MESSAGE, typeName: '.google.protobuf.Timestamp' },
        {
          name: 'times',
          number: 6,
          type: Type.MESSAGE,
          typeName: '.google.protobuf.Timestamp',
          label: Label.REPEATED,
        },
        { name: 'sizes', number: 7, type: Type.INT64, label: Label.REPEATED },
        {
          name: 'children',
          number: 8,
          type: Type.MESSAGE,
          typeName: '.test.Sample.ChildrenEntry',
          label: Label.REPEATED,
        },
        {
          name: 'counts',
          number: 9,
          type: Type.MESSAGE,
          typeName: '.test.Sample.CountsEntry',
          label: Label.REPEATED,
        },
        { name: 'items', number: 10, type: Type.MESSAGE, typeName: '.test.Sample', label: Label.REPEATED },
        { name: 'text', number: 11, type: Type.STRING, oneofIndex: 0 },
        { name: 'nested', number: 12, type: Type.MESSAGE, typeName: '.test.Sample', oneofIndex: 0 },
        { name: 'level', number: 13, type: Type.ENUM, typeName: '.test.Level' },
      ].map((field) => ({ label: Label.OPTIONAL, jsonName: camel(field.name), ...field })),
      oneofDecl: [{ name: 'choice' }, { name: '_ratio' }],
      nestedType: [
        mapEntry('ChildrenEntry', { type: Type.MESSAGE, typeName: '.test.Sample' }),
        mapEntry('CountsEntry', { type: Type.INT64 }),
      ],
    },
  ],
});

function camel(name: string): string {
  return name.replace(/_(\w)/g, (_, letter: string) => letter.toUpperCase());
}

function mapEntry(name: string, value: { type: Type; typeName?: string }) {
  return {
    name,
    options: { mapEntry: true },
    field: [
      { name: 'key', number: 1, type: Type.STRING, label: Label.OPTIONAL, jsonName: 'key' },
      { name: 'value', number: 2, label: Label.OPTIONAL, jsonName: 'value', ...value },
    ],
  };
}

const Sample = createFileRegistry(sampleFile, (name) =>
  name === 'google/protobuf/timestamp.proto' ? file_google_protobuf_timestamp : undefined,
).getMessage('test.Sample')!;

const writeSample = messageWriter(Sample);
const first = new Date('2024-09-01T00:00:00.123Z');
const second = new Date('2024-10-01T12:30:00.000Z');

describe('messageWriter: a domain value as the message init', () => {
  it.each([
    {
      name: 'copies strings, numbers, enums',
      domain: { name: 'a', level: 1 },
      init: { name: 'a', level: 1 },
    },
    {
      name: 'leaves null and undefined unset',
      domain: { name: null, ratio: undefined, at: null, items: null, choice: undefined },
      init: {},
    },
    {
      name: "keeps 0, '' and false as values (an optional 0 is set)",
      domain: { name: '', ratio: 0 },
      init: { name: '', ratio: 0 },
    },
    { name: 'turns a number into a bigint for int64', domain: { count: 3 }, init: { count: 3n } },
    {
      name: 'keeps a bigint for int64',
      domain: { count: 9007199254740993n },
      init: { count: 9007199254740993n },
    },
    {
      name: 'writes an int64 with jstype JS_STRING as a string',
      domain: { countText: 5 },
      init: { countText: '5' },
    },
    { name: 'turns a Date into a Timestamp', domain: { at: first }, init: { at: timestampFromDate(first) } },
    {
      name: 'keeps a Timestamp that is already one',
      domain: { at: timestampFromDate(first) },
      init: { at: timestampFromDate(first) },
    },
    {
      name: 'converts each element of a repeated field',
      domain: { times: [first, second], sizes: [1, 2n] },
      init: { times: [timestampFromDate(first), timestampFromDate(second)], sizes: [1n, 2n] },
    },
    {
      name: 'writes nested and recursive messages, leaving out fields they lack',
      domain: { items: [{ name: 'x', at: second, teamId: 'team_1', items: [{ count: 1 }] }] },
      init: { items: [{ name: 'x', at: timestampFromDate(second), items: [{ count: 1n }] }] },
    },
    {
      name: 'converts the values of maps of messages and of 64-bit integers',
      domain: { children: { a: { count: 1, at: first } }, counts: { a: 2, b: 3n } },
      init: { children: { a: { count: 1n, at: timestampFromDate(first) } }, counts: { a: 2n, b: 3n } },
    },
    {
      name: 'copies a oneof as given',
      domain: { choice: { case: 'text', value: 'hi' } },
      init: { choice: { case: 'text', value: 'hi' } },
    },
    {
      name: 'leaves out what the message does not have',
      domain: { name: 'a', teamId: 'team_1', createdAt: first },
      init: { name: 'a' },
    },
  ])('$name', ({ domain, init }) => {
    const written = writeSample(domain);
    expect(written).toStrictEqual(init);
    // What it writes is what protobuf-es takes: it goes over the wire and comes back the same.
    const decoded = fromBinary(Sample, toBinary(Sample, create(Sample, written)));
    expect(decoded).toEqual(create(Sample, init));
  });

  it('returns a new object and leaves the domain value as it was', () => {
    const domain = { name: 'a', at: first, sizes: [1] };
    const written = writeSample(domain);
    expect(written).not.toBe(domain);
    expect(domain).toStrictEqual({ name: 'a', at: first, sizes: [1] });
  });
});

describe('messageWriter over the contracts', () => {
  const createdAt = new Date('2025-01-02T03:04:05.678Z');

  it('writes a budget: timestamps, thresholds with and without a notification, tags, null as unset', () => {
    const budget = {
      id: 'bdg_1',
      teamId: 'team_1',
      projectId: 'prj_1',
      name: 'monthly',
      amount: 500,
      currency: 'USD',
      period: 'monthly',
      status: 'active',
      thresholds: [
        { percentage: 50, notifiedAt: createdAt },
        { percentage: 100, notifiedAt: null },
      ],
      tags: { env: 'prod' },
      currentSpend: 250,
      percentageUsed: 50,
      forecastSpend: 520,
      unconvertedSpend: [{ currency: 'EUR', amount: 3 }],
      periodStart: createdAt,
      periodEnd: createdAt,
      evaluatedAt: null,
      dataThrough: null,
      createdAt,
      updatedAt: createdAt,
    };
    const message = create(budgets.BudgetSchema, messageWriter(budgets.BudgetSchema)(budget));
    expect(message).toMatchObject({ id: 'bdg_1', amount: 500, tags: { env: 'prod' }, forecastSpend: 520 });
    expect(message.thresholds[0]!.notifiedAt).toEqual(timestampFromDate(createdAt));
    expect(message.thresholds[1]!.notifiedAt).toBeUndefined();
    expect(message.unconvertedSpend[0]).toMatchObject({ currency: 'EUR', amount: 3 });
    expect(message.evaluatedAt).toBeUndefined();
    expect(message.dataThrough).toBeUndefined();
    expect(message.createdAt).toEqual(timestampFromDate(createdAt));
  });

  it('writes a team: int64 credits as a bigint and its nested limits', () => {
    const limits = { requestsPerMinute: 600, concurrentRequests: 10 };
    const team = messageWriter(identity.TeamSchema)({
      id: 'team_1',
      name: 'Default',
      plan: 'enterprise',
      defaultRole: 'member',
      scanCredits: 12,
      createdAt,
      apiLimits: limits,
      scimLimits: limits,
    });
    expect(team).toMatchObject({ scanCredits: 12n, apiLimits: limits, scimLimits: limits });
  });

  it('writes a delivery: each attempt of its log, with int64 latency', () => {
    const delivery = messageWriter(notifier.DeliverySchema)({
      id: 'msg_1',
      webhookId: 'whk_1',
      eventId: 'evt_1',
      eventType: 'violations.violation.created',
      status: 'pending',
      attempts: 1,
      nextAttemptAt: null,
      attemptLog: [
        {
          attempt: 1,
          attemptedAt: createdAt,
          responseStatus: 500,
          latencyMs: 42,
          responseExcerpt: 'oops',
          outcome: 'failure',
          trigger: 'scheduled',
        },
      ],
      createdAt,
      updatedAt: createdAt,
    });
    expect(delivery.nextAttemptAt).toBeUndefined();
    expect(delivery.attemptLog![0]).toMatchObject({
      latencyMs: 42n,
      attemptedAt: timestampFromDate(createdAt),
    });
  });
});
