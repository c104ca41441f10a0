/**
 * SCIM on a large team: users bulk-inserted into identity's table, then `userName eq` lookups, `co`
 * filters and list pages through the gateway, and what EXPLAIN says of their queries.
 */
import pg from 'pg';
// The service's own filter translation, so that EXPLAIN sees the SQL the service sends.
import { filterToSql, parseFilter, userFilterAttributes } from '@costgov/identity';
import { measure, progress, type CpuProbe, type LoadSettings } from './load';
import type { Gateway } from './processes';
import { scimTarget, type PlanSummary, type ScimResult } from './report';

// prettier-ignore
const givenNames = [
  'Ada', 'Alan', 'Amara', 'Ana', 'Ben', 'Carla', 'Chen', 'Dario', 'Elena', 'Emeka', 'Farah', 'Grace',
  'Hana', 'Ivan', 'Jonas', 'Kenji', 'Lea', 'Luis', 'Maya', 'Mohammed', 'Nora', 'Olga', 'Pablo', 'Priya',
  'Quentin', 'Rosa', 'Sven', 'Tariq', 'Uma', 'Vera', 'Wei', 'Yusuf', 'Zoe',
];
// prettier-ignore
const familyNames = [
  'Abbott', 'Becker', 'Castillo', 'Dubois', 'Eriksen', 'Fischer', 'Garcia', 'Hoffmann', 'Ibrahim',
  'Jensen', 'Kowalski', 'Lambert', 'Martin', 'Nakamura', 'Okafor', 'Petrov', 'Quinn', 'Rossi', 'Schmidt',
  'Tanaka', 'Urban', 'Varga', 'Wagner', 'Xu', 'Yilmaz', 'Zhang', 'Silva', 'Novak', 'Moreau', 'Kim',
  'Lopez', 'Singh', 'Smith', 'Murphy', 'Haddad', 'Andersson', 'Costa', 'Horvat', 'Weber', 'Bauer',
];

/**
 * `users` users of `teamId` in one INSERT ... SELECT: userName `user<n>.<surname>@example<m>.com`, the
 * names, one work e-mail, `role` member, one in 50 inactive, created over the last two years (in the order
 * of n, a minute of jitter). VACUUM (ANALYZE) afterwards leaves the table as autovacuum would soon after
 * such an import: statistics, and the visibility map that lets count(*) read an index alone.
 */
async function seedUsers(databaseUrl: string, teamId: string, users: number): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(
      `INSERT INTO identity.scim_users (id, team_id, user_name, external_id, given_name, family_name,
         formatted_name, display_name, emails, active, role, created_at, updated_at)
       SELECT gen_random_uuid(), $1, user_name, '00u' || lpad(to_hex(n), 17, '0'), given, family,
         given || ' ' || family, given || ' ' || family,
         jsonb_build_array(jsonb_build_object('value', user_name, 'type', 'work', 'primary', true)),
         n % 50 <> 0, 'member', created, created
       FROM (
         SELECT n, given, family, created,
           'user' || n || '.' || lower(family) || '@example' || (1 + n % 20) || '.com' AS user_name
         FROM (
           SELECT n,
             ($2::text[])[1 + (n * 7) % cardinality($2::text[])] AS given,
             ($3::text[])[1 + (n * 13) % cardinality($3::text[])] AS family,
             now() - make_interval(secs => ($4::int - n) * (63072000.0 / $4::int) + random() * 60) AS created
           FROM generate_series(1, $4::int) AS n
         ) AS named
       ) AS users`,
      [teamId, givenNames, familyNames, users],
    );
    await client.query('VACUUM (ANALYZE) identity.scim_users');
  } finally {
    await client.end();
  }
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  Plans?: PlanNode[];
}

/**
 * EXPLAIN ANALYZE of the two statements the service's listPage runs for a request (the total, then the
 * page; services/identity/src/scim/paging.ts), with the WHERE clause of the service's filter translation.
 */
async function explain(
  client: pg.Client,
  teamId: string,
  query: string,
  input: { filter?: string; startIndex: number; count: number },
): Promise<PlanSummary> {
  const where = ['team_id = $1'];
  const params: unknown[] = [teamId];
  if (input.filter) {
    const sql = filterToSql(parseFilter(input.filter, userFilterAttributes), userFilterAttributes, 2);
    where.push(sql.sql);
    params.push(...sql.params);
  }
  const from = `FROM scim_users WHERE ${where.join(' AND ')}`;
  const statements = [
    `SELECT count(*)::int AS n ${from}`,
    `SELECT * ${from} ORDER BY created_at, id LIMIT ${input.count} OFFSET ${input.startIndex - 1}`,
  ];
  const summary: PlanSummary = {
    query,
    indexes: [],
    seqScans: [],
    rows: 0,
    planningMs: 0,
    executionMs: 0,
  };
  const walk = (node: PlanNode) => {
    if (node['Index Name'] && !summary.indexes.includes(node['Index Name']))
      summary.indexes.push(node['Index Name']);
    if (node['Node Type'] === 'Seq Scan') summary.seqScans.push(`Seq Scan on ${node['Relation Name']}`);
    node.Plans?.forEach(walk);
  };
  for (const statement of statements) {
    const explainOnce = async () =>
      (
        await client.query<{ 'QUERY PLAN': Array<Record<string, unknown>> }>(
          `EXPLAIN (ANALYZE, FORMAT JSON) ${statement}`,
          params,
        )
      ).rows[0]!['QUERY PLAN'][0]!;
    await explainOnce(); // the first one fills the session's catalog caches; the service's are warm
    const plan = await explainOnce();
    walk(plan.Plan as PlanNode);
    summary.planningMs += Number(plan['Planning Time']);
    summary.executionMs += Number(plan['Execution Time']);
    summary.rows = (plan.Plan as PlanNode)['Actual Rows'] ?? 0;
  }
  return summary;
}

const random = (n: number) => Math.floor(Math.random() * n);

/**
 * Substrings of userNames that match a few users: `<k>.` with k one digit shorter than the largest user
 * number matches user<k>. and the ten or so users whose number ends with k (1234. matches user1234.,
 * user11234., ..., user91234. among 100,000).
 */
function substrings(users: number, how: number): string[] {
  const digits = Math.max(1, String(users).length - 2);
  const low = digits === 1 ? 1 : 10 ** (digits - 1);
  return Array.from({ length: how }, () => `${low + random(10 ** digits - low)}.`);
}

async function get(url: string, token: string): Promise<{ totalResults: number; Resources: unknown[] }> {
  const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  if (response.status !== 200)
    throw new Error(`GET ${url} answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as { totalResults: number; Resources: unknown[] };
}

export async function scimSection(options: {
  databaseUrl: string;
  teamId: string;
  users: number;
  token: string;
  gateway: Gateway;
  settings: LoadSettings;
  cpu: () => Promise<CpuProbe[]>;
}): Promise<ScimResult> {
  const { databaseUrl, teamId, users, token, gateway, settings } = options;
  progress(`SCIM: inserting ${users} users into identity.scim_users, then VACUUM (ANALYZE)`);
  const seedStarted = performance.now();
  await seedUsers(databaseUrl, teamId, users);
  const seedSeconds = (performance.now() - seedStarted) / 1000;
  progress(`SCIM: seeded in ${seedSeconds.toFixed(1)} s`);

  const client = new pg.Client({ connectionString: databaseUrl, options: '-c search_path=identity,public' });
  await client.connect();
  let userNames: string[];
  let explained: ScimResult['explain'];
  const cos = substrings(users, 1_000);
  const maxStart = Math.min(10_000, users);
  try {
    userNames = (
      await client.query<{ user_name: string }>(
        'SELECT user_name FROM scim_users WHERE team_id = $1 ORDER BY random() LIMIT 10000',
        [teamId],
      )
    ).rows.map((r) => r.user_name);
    const eqFilter = `userName eq "${userNames[0]}"`;
    const coFilter = `userName co "${cos[0]}"`;
    progress('SCIM: EXPLAIN ANALYZE of the eq, co and page queries');
    explained = {
      eq: await explain(client, teamId, eqFilter, { filter: eqFilter, startIndex: 1, count: 25 }),
      co: await explain(client, teamId, coFilter, { filter: coFilter, startIndex: 1, count: 25 }),
      list: await explain(client, teamId, `startIndex=${maxStart}&count=100`, {
        startIndex: maxStart,
        count: 100,
      }),
    };
  } finally {
    await client.end();
  }

  const usersUrl = `${gateway.url}/scim/v2/Users`;
  const filterPath = (filter: string) => `/scim/v2/Users?filter=${encodeURIComponent(filter)}`;
  const eqPath = () => filterPath(`userName eq "${userNames[random(userNames.length)]}"`);
  const coPath = () => filterPath(`userName co "${cos[random(cos.length)]}"`);
  const listPath = () => `/scim/v2/Users?startIndex=${1 + random(maxStart)}&count=100`;

  // Each kind answers what it should before it is measured.
  const one = await get(`${gateway.url}${filterPath(`userName eq "${userNames[0]!.toUpperCase()}"`)}`, token);
  if (one.totalResults !== 1) throw new Error(`eq found ${one.totalResults} users, not 1`);
  const few = await get(`${gateway.url}${filterPath(`userName co "${cos[0]}"`)}`, token);
  if (few.totalResults < 1 || few.totalResults > 100)
    throw new Error(`co "${cos[0]}" found ${few.totalResults} users, not a few`);
  const page = await get(`${usersUrl}?startIndex=1&count=100`, token);
  if (page.totalResults !== users || page.Resources.length !== Math.min(100, users))
    throw new Error(
      `a page holds ${page.Resources.length} of ${page.totalResults} users, not 100 of ${users}`,
    );

  const headers = { authorization: `Bearer ${token}` };
  const target = (name: string, paths: () => string, connections = scimTarget.connections) => ({
    name,
    url: gateway.url,
    headers,
    connections,
    paths,
  });
  const observe = { cpu: options.cpu, gatewayMetricsUrl: gateway.metricsUrl };
  const eq = await measure(target('SCIM userName eq', eqPath), settings, observe);
  // Warm already: the time one request takes when nothing queues.
  const eqOneConnection = await measure(
    target('SCIM userName eq, 1 connection', eqPath, 1),
    { ...settings, warmUpSeconds: 0 },
    observe,
  );
  const co = await measure(target('SCIM userName co', coPath), settings, observe);
  const list = await measure(target('SCIM pages of 100', listPath), settings, observe);
  return {
    users,
    seedSeconds,
    connections: scimTarget.connections,
    eq,
    eqOneConnection,
    co,
    list,
    explain: explained,
    target: scimTarget,
    verdict: eq.p99Ms < scimTarget.p99Ms ? 'PASS' : 'BELOW',
  };
}
