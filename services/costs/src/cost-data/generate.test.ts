import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { estateResources, estateShares, focusLines, type GenerateOptions } from './generate';

/** The generated file read back with csv-parse: one object per row, NULL as it is written. */
const rowsOf = (options: GenerateOptions) =>
  parse([...focusLines(options)].join(''), { columns: true }) as Array<Record<string, string>>;

const hourOf = (stamp: string) => Date.parse(`${stamp.replace(' ', 'T')}Z`) / 3_600_000;

describe('focusLines with a resource count (a large estate)', () => {
  const options: GenerateOptions = { rows: 20_000, resources: 3_000, month: '2026-02', seed: 9 };
  const rows = rowsOf(options);
  const byResource = Map.groupBy(rows, (row) => row.ResourceId!);
  const monthHours = 28 * 24;

  it('writes the rows asked for over exactly the resources asked for', () => {
    expect(rows).toHaveLength(options.rows);
    expect(byResource.size).toBe(options.resources);
    expect(estateResources(options)).toBe(options.resources);
    // 20,000 over 3,000: 2,000 resources get 7 rows, the other 1,000 get 6.
    const counts = [...byResource.values()].map((list) => list.length);
    const slots = Math.ceil(options.rows / options.resources!);
    expect(Math.max(...counts)).toBe(slots);
    expect(Math.min(...counts)).toBe(slots - 1);
  });

  it("spreads each resource's rows over the month without overlap", () => {
    const start = hourOf('2026-02-01 00:00:00');
    for (const list of [...byResource.values()].slice(0, 200)) {
      const spans = list
        .map((row) => [hourOf(row.ChargePeriodStart!), hourOf(row.ChargePeriodEnd!)] as const)
        .sort((a, b) => a[0] - b[0]);
      expect(spans[0]![0]).toBe(start);
      for (let i = 1; i < spans.length; i++) expect(spans[i]![0]).toBe(spans[i - 1]![1]);
      // A resource with every slot covers the whole month.
      if (list.length === Math.ceil(options.rows / options.resources!))
        expect(spans.at(-1)![1]).toBe(start + monthHours);
    }
  });

  it('holds what the rules look for: untagged, team-less, previous generation, non-production always on', () => {
    const first = [...byResource.values()].map((list) => list[0]!);
    const share = (test: (row: Record<string, string>) => boolean) =>
      first.filter(test).length / first.length;
    const tagsOf = (row: Record<string, string>) =>
      row.Tags === 'NULL' ? undefined : (JSON.parse(row.Tags!) as Record<string, string>);
    expect(share((row) => tagsOf(row) === undefined)).toBeCloseTo(estateShares.untagged, 1);
    const tagged = first.filter((row) => tagsOf(row) !== undefined);
    const withoutTeam = tagged.filter((row) => tagsOf(row)!.team === undefined).length / tagged.length;
    expect(withoutTeam).toBeCloseTo(estateShares.withoutTeam, 1);

    const instances = first.filter((row) => row.PricingUnit === 'Hours');
    const previous = instances.filter((row) => /\b(m4|t2|c4|r4)\.\w+/.test(row.ChargeDescription!));
    expect(previous.length / instances.length).toBeCloseTo(estateShares.previousGeneration, 1);
    // Quantity in hours over the hours of the charge period: 1 is around the clock.
    const runningShare = (row: Record<string, string>) =>
      Number(row.PricingQuantity) / (hourOf(row.ChargePeriodEnd!) - hourOf(row.ChargePeriodStart!));
    const nonProduction = instances.filter((row) => {
      const environment = tagsOf(row)?.environment;
      return environment !== undefined && environment !== 'prod';
    });
    const alwaysOn = nonProduction.filter((row) => runningShare(row) > 0.99);
    expect(alwaysOn.length).toBeGreaterThan(0);
    expect(alwaysOn.length / nonProduction.length).toBeCloseTo(estateShares.nonProductionAlwaysOn, 1);
    // Production instances run around the clock; the other non-production ones 30 to 70 % of it.
    for (const row of nonProduction.filter((r) => !alwaysOn.includes(r)))
      expect(runningShare(row)).toBeGreaterThanOrEqual(0.3 - 1e-6);
  });

  it('costs are the quantity times the unit price, less the commitment discount', () => {
    for (const row of rows.slice(0, 2_000)) {
      const list = Number(row.PricingQuantity) * Number(row.ListUnitPrice);
      expect(Number(row.ListCost)).toBeCloseTo(list, 5);
      const discounted = row.PricingCategory === 'Committed' ? list * 0.72 : list;
      expect(Number(row.EffectiveCost)).toBeCloseTo(discounted, 5);
    }
  });

  it('is the same file for the same seed, another for another seed', () => {
    const small = { rows: 500, resources: 100, month: '2026-02' };
    expect([...focusLines({ ...small, seed: 3 })]).toEqual([...focusLines({ ...small, seed: 3 })]);
    expect([...focusLines({ ...small, seed: 3 })]).not.toEqual([...focusLines({ ...small, seed: 4 })]);
  });

  it('refuses a resource count that is not a positive whole number', () => {
    expect(() => [...focusLines({ rows: 10, resources: 0, month: '2026-02' })]).toThrow(/resources/);
    expect(() => [...focusLines({ rows: 10, resources: 2.5, month: '2026-02' })]).toThrow(/resources/);
  });
});
