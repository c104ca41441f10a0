import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import assert from 'node:assert/strict';
import { usageBased } from './focus';

/**
 * The repository's FOCUS sample, read by the scanner's tests and the REST scan test. node:assert, not
 * vitest's expect, checks what the file must hold: this package is also loaded outside vitest.
 */
export const sample = readFileSync(path.resolve(__dirname, '../../../data/focus/focus_sample_1000.csv'));

// The file as the tests read it themselves, independently of costs and the rules.

export interface Row {
  resourceId: string;
  start: number;
  end: number;
  day: string;
  month: string;
  effective: number;
  billed: number;
  service: string;
  tags: Record<string, string>;
  description: string;
  commitmentStatus: string;
  /** FOCUS ChargeCategory (Usage, Purchase, Tax, Credit, Adjustment). */
  category: string;
  /** ChargeFrequency ('' when null). */
  frequency: string;
}

const missing = (value: string | undefined) => value === undefined || value === '' || value === 'NULL';
const utc = (text: string) => Date.parse(`${text.replace(' ', 'T')}Z`);

export const rows: Row[] = (parse(sample, { columns: true, bom: true }) as Record<string, string>[]).map(
  (record) => ({
    resourceId: missing(record.ResourceId) ? '' : record.ResourceId!,
    start: utc(record.ChargePeriodStart!),
    end: utc(record.ChargePeriodEnd!),
    day: record.ChargePeriodStart!.slice(0, 10),
    month: record.ChargePeriodStart!.slice(0, 7),
    effective: Number(record.EffectiveCost),
    billed: Number(record.BilledCost),
    description: missing(record.ChargeDescription) ? '' : record.ChargeDescription!,
    commitmentStatus: missing(record.CommitmentDiscountStatus) ? '' : record.CommitmentDiscountStatus!,
    category: missing(record.ChargeCategory) ? '' : record.ChargeCategory!,
    frequency: missing(record.ChargeFrequency) ? '' : record.ChargeFrequency!,
    service: missing(record.ServiceName) ? '' : record.ServiceName!,
    tags: missing(record.Tags) ? {} : (JSON.parse(record.Tags!) as Record<string, string>),
  }),
);

/** What a resource's rows cost a month: their cost per day from its first charge to its last, times 30.44. */
export function monthlyCost(list: Row[]): number {
  const days =
    (Math.max(...list.map((row) => row.end)) - Math.min(...list.map((row) => row.start))) / 86_400_000;
  return (sum(list) / Math.max(1, days)) * 30.44;
}

export const sum = (list: Row[]) => list.reduce((total, row) => total + row.effective, 0);

export function byResource(): Map<string, Row[]> {
  const groups = new Map<string, Row[]>();
  for (const row of rows.filter((r) => r.resourceId))
    groups.set(row.resourceId, [...(groups.get(row.resourceId) ?? []), row]);
  return groups;
}

/**
 * The row a resource's descriptive columns come from: its costliest charge period (effective, then billed
 * cost, then the latest), and in it the costliest row (effective, then billed cost, then the first description).
 */
export function costliestRow(list: Row[]): Row {
  const periods = new Map<number, Row[]>();
  for (const row of list) periods.set(row.start, [...(periods.get(row.start) ?? []), row]);
  const sumOf = (rowsOf: Row[], key: 'effective' | 'billed') => rowsOf.reduce((t, r) => t + r[key], 0);
  const [, period] = [...periods].sort(
    ([startA, a], [startB, b]) =>
      sumOf(b, 'effective') - sumOf(a, 'effective') ||
      sumOf(b, 'billed') - sumOf(a, 'billed') ||
      startB - startA,
  )[0]!;
  return [...period].sort(
    (a, b) =>
      b.effective - a.effective ||
      b.billed - a.billed ||
      (a.description === b.description
        ? 0
        : !a.description
          ? 1
          : !b.description
            ? -1
            : a.description < b.description
              ? -1
              : 1),
  )[0]!;
}

/**
 * What the rules should report over this file (`ruleId resourceId`, sorted), worked out from the
 * rows alone for a scan of one connection holding it.
 */
export function expectedFindings(connectionId: string, requiredTags: string[]): string[] {
  const found: string[] = [];
  const resources = byResource();
  const windowEnd = Math.max(...rows.map((row) => row.end));
  const total = sum(rows);

  // Charges that cannot carry tags, by ChargeCategory: never judged on tags, left out of tag shares.
  const untaggable = (row: Row) => ['Tax', 'Credit', 'Purchase', 'Adjustment'].includes(row.category);
  // A tag key as compared: case, `-`, `_` and spaces aside (`CostCenter` is `cost-center`).
  const sameKey = (key: string) =>
    key
      .toLowerCase()
      .split(/[-_\s]/)
      .join('');

  // A resource is judged on the tags of its latest row, unless its costliest row cannot carry tags.
  for (const [id, list] of resources) {
    if (untaggable(costliestRow(list))) continue;
    const latest = list.reduce((a, b) => (b.start > a.start ? b : a));
    const present = Object.entries(latest.tags)
      .filter(([, value]) => value.trim())
      .map(([key]) => sameKey(key));
    if (requiredTags.some((key) => !present.includes(sameKey(key))))
      found.push(`tags-missing-required ${id}`);
  }

  // Keys that differ in words (env for environment) are flagged; in case, spaces or separators only, not.
  const foldKey = (key: string) => {
    const folded = key.toLowerCase().replace(/[^a-z0-9]/g, '');
    return folded === 'env' ? 'environment' : folded;
  };
  const keySpellings = new Map<string, Set<string>>();
  for (const row of rows)
    for (const key of Object.keys(row.tags))
      keySpellings.set(foldKey(key), (keySpellings.get(foldKey(key)) ?? new Set()).add(sameKey(key)));
  for (const [key, spellings] of keySpellings)
    if (spellings.size > 1) found.push(`tags-inconsistent-keys tag-key:${key}`);

  const foldValue = (value: string) => {
    const folded = value.toLowerCase().replace(/[^a-z0-9]/g, '');
    return ({ prod: 'production', dev: 'development' } as Record<string, string>)[folded] ?? folded;
  };
  const valueSpellings = new Map<string, Set<string>>();
  for (const row of rows)
    for (const [key, value] of Object.entries(row.tags)) {
      if (!foldValue(value)) continue;
      const id = `${sameKey(key)}=${foldValue(value)}`;
      valueSpellings.set(id, (valueSpellings.get(id) ?? new Set()).add(value));
    }
  for (const [id, spellings] of valueSpellings)
    if (spellings.size > 1) found.push(`tags-inconsistent-values tag-value:${id}`);

  // Shares of the spend that can carry tags (resource) or belong to a resource (ChargeCategory).
  const attributable = rows.filter((row) => !untaggable(row));
  const taggable = attributable.filter((row) => row.resourceId);
  const untagged = sum(taggable.filter((row) => Object.keys(row.tags).length === 0));
  if (sum(taggable) > 0 && untagged / sum(taggable) >= 0.1)
    found.push(`spend-unallocated-share ${connectionId}`);
  const unattributed = sum(attributable.filter((row) => !row.resourceId));
  if (sum(attributable) > 0 && unattributed / sum(attributable) >= 0.2)
    found.push(`spend-unattributed-share ${connectionId}`);

  // New resources (first billed in the last 7 days of the data, on 3 days or more, their costliest
  // charge a usage) at 100 a month or more and 5% of the bill, both per day of data.
  const spanDays = (windowEnd - Math.min(...rows.map((row) => row.start))) / 86_400_000;
  const monthlyBill = (total / spanDays) * 30.44;
  for (const [id, list] of spanDays > 14 ? resources : new Map<string, Row[]>()) {
    const first = Math.min(...list.map((row) => row.start));
    if (windowEnd - first > 7 * 86_400_000) continue;
    if (costliestRow(list).category !== 'Usage' || new Set(list.map((row) => row.day)).size < 3) continue;
    const last = Math.max(...list.map((row) => row.end));
    const runRate = (sum(list) / Math.max(1, (last - first) / 86_400_000)) * 30.44;
    if (runRate >= Math.max(100, 0.05 * monthlyBill)) found.push(`spend-new-costly-resource ${id}`);
  }

  // Charge descriptions of each resource's costliest row: idle addresses, extended support, old families.
  const oldFamilies = [
    't1',
    't2',
    'm1',
    'm2',
    'm3',
    'm4',
    'c1',
    'c3',
    'c4',
    'r3',
    'r4',
    'i2',
    'd2',
    'g2',
    'g3',
    'p2',
    'x1',
  ];
  const counts = { idle: 0, extended: 0, old: 0 };
  for (const [id, list] of resources) {
    const text = costliestRow(list).description;
    if (text.includes('Idle public IPv4 address')) {
      found.push(`network-idle-public-ip ${id}`);
      counts.idle++;
    }
    if (text.includes('Extended Support')) {
      found.push(`spend-extended-support ${id}`);
      counts.extended++;
    }
    const words = text.split(/[\s()]+/);
    if (
      words.some(
        (word) =>
          word === 'gp2' ||
          word === 'Magnetic' ||
          (oldFamilies.includes(word.split('.')[0]!) && word.includes('.')),
      )
    ) {
      found.push(`compute-previous-generation ${id}`);
      counts.old++;
    }
  }
  // The sample holds each of these (so the rules are exercised), and commitments that were all used.
  assert.ok(counts.idle > 0, 'the sample holds an idle resource');
  assert.ok(counts.extended > 0, 'the sample holds an extended-support resource');
  assert.ok(counts.old > 0, 'the sample holds a previous-generation resource');
  assert.ok(
    rows.some((row) => row.commitmentStatus === 'Used'),
    'the sample holds used commitments',
  );
  assert.deepEqual(
    rows.filter((row) => row.commitmentStatus === 'Unused'),
    [],
  );
  // FOCUS 1.0 has no capacity reservation columns: that rule finds nothing here.

  // Always-on and steady on-demand need 14 days of a resource and 80% of the hours from its first to its
  // last charge; month-over-month rules a second month; anomalies a day of usage-based charges 50 (the
  // default minimum daily impact) above its baseline. None can fire here; each is checked, not assumed.
  for (const list of resources.values()) {
    const spanHours =
      (Math.max(...list.map((row) => row.end)) - Math.min(...list.map((row) => row.start))) / 3_600_000;
    assert.ok(spanHours < 14 * 24 || new Set(list.map((row) => row.start)).size < 0.8 * spanHours);
  }
  assert.equal(new Set(rows.map((row) => row.month)).size, 1);
  const daily = new Map<string, number>();
  for (const row of rows.filter((r) => usageBased(r.category, r.frequency)))
    daily.set(row.day, (daily.get(row.day) ?? 0) + row.effective);
  assert.ok(Math.max(...[...daily.values()]) < 50);

  return found.sort();
}
