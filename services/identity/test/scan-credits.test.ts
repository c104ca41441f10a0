import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identity } from '@costgov/contracts';
import { ConflictError, NotFoundError, ValidationError } from '@costgov/errors';
import type { RpcClient } from '@costgov/rpc';
import { startIdentity, type IdentityUnderTest } from './fixture';

let started: IdentityUnderTest | undefined;
let client: RpcClient<typeof identity.IdentityService>;
let team: { teamId: string };
let other: { teamId: string };

beforeAll(async () => {
  started = await startIdentity();
  client = started.client;
  team = { teamId: (await client.createTeam({ name: 'scanning', plan: 'team' })).id };
  other = { teamId: (await client.createTeam({ name: 'other', plan: 'team' })).id };
  await client.grantScanCredits({ teamId: team.teamId, credits: 10n });
});

afterAll(async () => {
  await started?.stop();
});

const balance = async (t = team) => Number((await client.getTeam({ id: t.teamId })).scanCredits);

describe('scan credits: one debit per scan, at most one refund', () => {
  it('debits once however often the same scan is debited, also concurrently', async () => {
    const results = await Promise.all(
      Array.from({ length: 5 }, () => client.debitScanCredits({ scanId: 'scn_a', credits: 3n }, team)),
    );
    expect(results.filter((r) => r.applied)).toHaveLength(1);
    expect(results.every((r) => r.balance === 7n)).toBe(true);
    expect(await balance()).toBe(7);
  });

  it('refunds a debit once, and a scan never debited is not found', async () => {
    const refunds = await Promise.all(
      Array.from({ length: 3 }, () => client.refundScanCredits({ scanId: 'scn_a' }, team)),
    );
    expect(refunds.filter((r) => r.applied)).toHaveLength(1);
    expect(await balance()).toBe(10);
    await expect(client.refundScanCredits({ scanId: 'scn_none' }, team)).rejects.toBeInstanceOf(
      NotFoundError,
    );
  });

  it('refuses a debit the balance cannot cover with a conflict, changing nothing', async () => {
    await expect(client.debitScanCredits({ scanId: 'scn_big', credits: 11n }, team)).rejects.toBeInstanceOf(
      ConflictError,
    );
    expect(await balance()).toBe(10);
    // The refused scan left no debit behind: refunding it finds nothing.
    await expect(client.refundScanCredits({ scanId: 'scn_big' }, team)).rejects.toBeInstanceOf(NotFoundError);
  });

  it("keeps teams apart: another team cannot replay or refund a team's scan", async () => {
    await client.debitScanCredits({ scanId: 'scn_b', credits: 1n }, team);
    await expect(client.debitScanCredits({ scanId: 'scn_b', credits: 1n }, other)).rejects.toBeInstanceOf(
      NotFoundError,
    );
    await expect(client.refundScanCredits({ scanId: 'scn_b' }, other)).rejects.toBeInstanceOf(NotFoundError);
    expect(await balance()).toBe(9);
    expect(await balance(other)).toBe(0);
  });

  it.each([
    ['zero credits', { scanId: 'scn_c', credits: 0n }, 'credits'],
    ['an empty scan id', { scanId: '', credits: 1n }, 'scan_id'],
  ])('refuses %s as invalid', async (_name, request, field) => {
    const error = await client.debitScanCredits(request, team).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).details.map((d) => d.field)).toEqual([field]);
  });
});

describe('team settings: required tags', () => {
  it('starts empty, keeps what is set (without repeats), per team', async () => {
    expect((await client.getTeamSettings({}, team)).requiredTags).toEqual([]);
    const set = await client.setRequiredTags({ requiredTags: ['env', 'owner', 'env'] }, team);
    expect(set.requiredTags).toEqual(['env', 'owner']);
    expect((await client.getTeamSettings({}, team)).requiredTags).toEqual(['env', 'owner']);
    expect((await client.getTeamSettings({}, other)).requiredTags).toEqual([]);
  });

  it('refuses blank or padded keys, naming each', async () => {
    const error = await client
      .setRequiredTags({ requiredTags: ['ok', ' ', 'padded '] }, team)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).details.map((d) => d.field)).toEqual([
      'required_tags[1]',
      'required_tags[2]',
    ]);
    expect((await client.getTeamSettings({}, team)).requiredTags).toEqual(['env', 'owner']);
  });
});

describe('team settings: minimum daily impact of an anomaly', () => {
  it('is unset (the scanner default) until set, per team, and unset again on request', async () => {
    expect((await client.getTeamSettings({}, team)).anomalyMinDailyImpact).toBeUndefined();
    const set = await client.setAnomalyMinDailyImpact({ anomalyMinDailyImpact: 12.5 }, team);
    expect(set.anomalyMinDailyImpact).toBe(12.5);
    expect((await client.getTeamSettings({}, team)).anomalyMinDailyImpact).toBe(12.5);
    expect((await client.getTeamSettings({}, other)).anomalyMinDailyImpact).toBeUndefined();
    // The required tags are left as they were.
    expect(set.requiredTags).toEqual((await client.getTeamSettings({}, team)).requiredTags);
    await client.setAnomalyMinDailyImpact({}, team);
    expect((await client.getTeamSettings({}, team)).anomalyMinDailyImpact).toBeUndefined();
  });

  it.each([-1, Number.POSITIVE_INFINITY, Number.NaN, 2e9])('refuses %s', async (amount) => {
    await client.setAnomalyMinDailyImpact({ anomalyMinDailyImpact: 7 }, team);
    const error = await client
      .setAnomalyMinDailyImpact({ anomalyMinDailyImpact: amount }, team)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).details.map((d) => d.field)).toEqual(['anomaly_min_daily_impact']);
    expect((await client.getTeamSettings({}, team)).anomalyMinDailyImpact).toBe(7);
  });
});
