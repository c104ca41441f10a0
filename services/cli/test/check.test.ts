import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Ajv, { type ValidateFunction } from 'ajv';
import Ajv04 from 'ajv-draft-04';
import addFormats from 'ajv-formats';
import type { Log } from 'sarif';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateXML } from 'xmllint-wasm';
import { startSystem, systemConfig, type RunningSystem } from '@costgov/embedded';
import { identity } from '@costgov/contracts';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import {
  eventually,
  focusFile,
  freePort,
  restCaller,
  startRestSystem,
  type RestSystem,
} from '@costgov/testing';
import { run } from '../src';
import type { CheckReportJson } from '../src/check/report';
import type { CliResult } from './cli';

const bootstrapKey = 'cg_live_clicheckbootstrapkey00000000000000';
let rest: RestSystem<RunningSystem>;
let reports: string;
const call = restCaller(() => rest.system.url, bootstrapKey);

/** The CLI run in this process with the given environment, its output captured. */
async function cliWith(env: Record<string, string | undefined>, ...argv: string[]): Promise<CliResult> {
  const result = { stdout: '', stderr: '' };
  const code = await run(argv, {
    stdout: { write: (text: string) => (result.stdout += text) },
    stderr: { write: (text: string) => (result.stderr += text) },
    env,
  });
  return { code, ...result };
}

const check = (...argv: string[]) =>
  cliWith({ COSTGOV_URL: rest.system.url, COSTGOV_API_KEY: bootstrapKey }, 'check', ...argv);

/** `check … --json`, parsed and validated against the documented schema of the result. */
async function checkJson(...argv: string[]): Promise<{ code: number; result: CheckReportJson }> {
  const { code, stdout, stderr } = await check(...argv, '--json');
  expect([0, 1], stderr).toContain(code);
  const result = JSON.parse(stdout) as CheckReportJson;
  expect(validateResult(result), ajv.errorsText(validateResult.errors)).toBe(true);
  expect(code).toBe(result.verdict === 'pass' ? 0 : 1);
  return { code, result };
}

// The SARIF schema is JSON Schema draft-04 (`id`, not `$id`): Ajv's draft-04 build validates it; the
// result's own schema is draft-07.
// Its language-code pattern is not valid with the `u` flag (an unbalanced bracket), hence unicodeRegExp off.
const ajv04 = addFormats(new Ajv04({ allErrors: true, strict: false, unicodeRegExp: false }));
const ajv = addFormats(new Ajv({ allErrors: true }));
let validateSarif: ValidateFunction;
let validateResult: ValidateFunction;
let junitSchema: string;

async function validJunit(file: string): Promise<string> {
  const xml = await readFile(file, 'utf8');
  const { valid, errors } = await validateXML({
    xml: [{ fileName: 'report.xml', contents: xml }],
    schema: [{ fileName: 'junit.xsd', contents: junitSchema }],
  });
  expect(errors.map((e) => e.message)).toEqual([]);
  expect(valid).toBe(true);
  return xml;
}

async function validSarif(file: string): Promise<Log> {
  const log = JSON.parse(await readFile(file, 'utf8')) as Log;
  expect(validateSarif(log), ajv04.errorsText(validateSarif.errors)).toBe(true);
  return log;
}

async function created(path: string, body: unknown): Promise<string> {
  const reply = await call('POST', path, { body });
  expect(reply.status, reply.text).toBe(201);
  return reply.body.data.id as string;
}

/** The identity service's gRPC API, for what REST does not do (scan credits, required tags). */
async function withIdentity(use: (client: RpcClient<typeof identity.IdentityService>) => Promise<void>) {
  const identityPort = rest.system.services.find((s) => s.name === 'identity')!.port;
  const client = createRpcClient(identity.IdentityService, `127.0.0.1:${identityPort}`);
  try {
    await use(client);
  } finally {
    client.close();
  }
}

/** Every item of a REST list, page by page. */
async function listAll<T>(path: string): Promise<T[]> {
  const all: T[] = [];
  for (let page = 1; ; page++) {
    const reply = await call('GET', `${path}&per_page=100&page=${page}`);
    expect(reply.status, reply.text).toBe(200);
    all.push(...reply.body.data);
    if (page >= reply.body.meta.total_pages) return all;
  }
}

beforeAll(async () => {
  rest = await startRestSystem({ startSystem, systemConfig }, bootstrapKey);
  // The gate reads a list of several pages twice (so that one changing meanwhile cannot pass), and this
  // file makes more requests than a key's default 120 a minute: it is not a test of the rate limit.
  await withIdentity((client) =>
    client.setTeamLimits({ teamId: rest.teamId, apiRequestsPerMinute: 1200 }).then(() => {}),
  );
  reports = await mkdtemp(join(tmpdir(), 'costgov-check-'));
  junitSchema = await readFile(join(__dirname, 'fixtures/junit.xsd'), 'utf8');
  const sarifSchema = await readFile(
    join(__dirname, '../../../node_modules/@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json'),
    'utf8',
  );
  validateSarif = ajv04.compile(JSON.parse(sarifSchema));
  validateResult = ajv.compile(
    JSON.parse(await readFile(join(__dirname, '../check-result.schema.json'), 'utf8')),
  );
});

afterAll(async () => {
  await rest?.system.stop();
  if (reports) await rm(reports, { recursive: true, force: true });
});

describe('costgov check on a clean project', () => {
  it('passes (exit 0) with a verdict line, a JSON result, and valid JUnit and SARIF files', async () => {
    const project = await created('/v1/guard/projects', { name: 'clean' });
    const junit = join(reports, 'clean.xml');
    const sarif = join(reports, 'clean.sarif');
    const text = await check('--project', project, '--junit', junit, '--sarif', sarif);
    expect(text.stderr).toBe('');
    expect(text.code).toBe(0);
    expect(text.stdout).toBe(
      `PASS: project clean (${project}): nothing open at severity high or above (0 checked)\n`,
    );

    const xml = await validJunit(junit);
    expect(xml).toMatch(/<testsuites name="costgov check prj_\w+" tests="2" failures="0"/);
    expect(xml).toContain('name="no open violation at high or above"');
    const log = await validSarif(sarif);
    expect(log.runs[0]!.tool.driver.name).toBe('costgov');
    expect(log.runs[0]!.results).toEqual([]);
    // The scan rules come from GET /v1/guard/rules, and the gate's own two besides.
    const rules = (await call('GET', '/v1/guard/rules')).body.data as Array<{ id: string }>;
    expect(log.runs[0]!.tool.driver.rules!.map((r) => r.id)).toEqual([
      ...rules.map((r) => r.id),
      'budget_threshold_breach',
      'max-spend-percentage',
    ]);

    const { result } = await checkJson('--project', project, '--fail-on', 'info');
    expect(result).toEqual({
      version: 1,
      verdict: 'pass',
      project: { id: project, name: 'clean' },
      policy: { fail_on: 'info', max_spend_percentage: null, ignore_acknowledged: false },
      summary: { violations: 0, findings: 0, budgets: 0, failed: 0 },
      items: [],
    });
    expect((await check('--project', project, '--quiet')).stdout).toBe('pass\n');
  });
});

describe('costgov check on a project over its budget', () => {
  let storefront: string;
  let steady: string;
  let violations: Array<{ id: string; severity: string }>;

  beforeAll(async () => {
    const connection = await created('/v1/guard/connections', { name: 'aws-prod', provider: 'aws' });
    storefront = await created('/v1/guard/projects', { name: 'storefront', connection_ids: [connection] });
    steady = await created('/v1/guard/projects', { name: 'steady', connection_ids: [connection] });
    const budget = (project: string, amount: number, thresholds: number[]) =>
      created('/v1/guard/budgets', {
        project_id: project,
        name: 'Cloud spend',
        amount,
        currency: 'USD',
        period: 'monthly',
        thresholds,
      });
    await budget(storefront, 100, [50, 80, 100]);
    const steadyBudget = await budget(steady, 1000, [90]);
    const upload = await call('POST', `/v1/guard/connections/${connection}/cost-data`, {
      raw: focusFile([30.25, 12.5, 40, 25.75]),
      contentType: 'text/csv',
    });
    expect(upload.status, upload.text).toBe(200);
    // 108.50 USD: storefront crosses 50, 80 and 100 % (info, warning, critical); steady is at 10.85 %.
    violations = await eventually(async () => {
      const list = await listAll<{ id: string; severity: string }>(
        `/v1/guard/violations?project_id=${storefront}&sort=-severity`,
      );
      return list.length === 3 ? list : undefined;
    });
    expect(violations.map((v) => v.severity)).toEqual(['critical', 'warning', 'info']);
    await eventually(async () => {
      const read = await call('GET', `/v1/guard/budgets/${steadyBudget}`);
      return read.body.data.percentage_used > 0 ? true : undefined;
    });
  });

  it('fails (exit 1) on the critical violation at --fail-on high, with a table and a verdict', async () => {
    const [critical] = violations;
    const result = await check('--project', storefront, '--fail-on', 'high');
    expect(result.code).toBe(1);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^FAILED +SEVERITY +ID +MESSAGE$/);
    expect(lines[1]).toMatch(
      new RegExp(
        `^violation budget_threshold_breach +critical +${critical!.id} +Budget 'Cloud spend' of project 'storefront'`,
      ),
    );
    expect(lines[2]).toBe('');
    expect(lines[3]).toBe(
      `FAIL: project storefront (${storefront}): 1 of 3 checked at severity high or above`,
    );
    expect(lines).toHaveLength(4);
  });

  it.each([
    ['info', 3],
    ['warning', 2],
    ['high', 1],
    ['critical', 1],
  ])('at --fail-on %s, %i of the three violations fail', async (failOn, failed) => {
    const { code, result } = await checkJson('--project', storefront, '--fail-on', failOn);
    expect(code).toBe(1);
    expect(result.summary).toEqual({ violations: 3, findings: 0, budgets: 0, failed });
    expect(result.items.filter((item) => item.failed).map((item) => item.id)).toEqual(
      violations.slice(0, failed).map((v) => v.id),
    );
  });

  it('writes a JUnit case per policy rule and per violation, and SARIF results by level', async () => {
    const junit = join(reports, 'storefront.xml');
    const sarif = join(reports, 'storefront.sarif');
    const { code } = await check(
      '--project',
      storefront,
      '--junit',
      junit,
      '--sarif',
      sarif,
      '--sarif-path',
      'infra/main.tf',
    );
    expect(code).toBe(1);
    const xml = await validJunit(junit);
    expect(xml).toMatch(/<testsuites [^>]*tests="5" failures="2"/);
    expect(xml).toContain(
      `<testcase classname="costgov.${storefront}.violations" name="budget_threshold_breach ${violations[0]!.id}">`,
    );
    expect(xml).toMatch(
      /<failure message="Budget &apos;Cloud spend&apos;|<failure message="Budget 'Cloud spend'/,
    );

    const log = await validSarif(sarif);
    const results = log.runs[0]!.results!;
    expect(results.map((r) => [r.partialFingerprints?.['costgovItem/v1'], r.level])).toEqual([
      [violations[0]!.id, 'error'],
      [violations[1]!.id, 'warning'],
      [violations[2]!.id, 'note'],
    ]);
    for (const result of results) {
      expect(result.ruleId).toBe('budget_threshold_breach');
      expect(result.locations![0]!.physicalLocation!.artifactLocation!.uri).toBe('infra/main.tf');
      expect(result.locations![0]!.logicalLocations![0]!.fullyQualifiedName).toMatch(
        new RegExp(`^${storefront}/violations/vio_`),
      );
    }
    expect(log.runs[0]!.automationDetails!.id).toBe(`costgov-check/${storefront}/`);
  });

  it('fails on a budget at or above --max-spend-percentage', async () => {
    const under = await checkJson('--project', steady, '--max-spend-percentage', '11');
    expect(under.code).toBe(0);
    expect(under.result.items).toEqual([
      expect.objectContaining({
        kind: 'budget',
        rule: 'max-spend-percentage',
        failed: false,
        percentage_used: 10.85,
      }),
    ]);
    const over = await check('--project', steady, '--max-spend-percentage', '10.85');
    expect(over.code).toBe(1);
    expect(over.stdout).toMatch(
      /^budget max-spend-percentage +- +bdg_\w+ +Budget 'Cloud spend' has used 10.85 %/m,
    );
    expect(over.stdout).toMatch(/FAIL: .*budgets at 10.85 % or more$/m);
    // Without the option budgets are not read: the project has no violation or finding.
    expect((await check('--project', steady)).code).toBe(0);
  });

  it('counts an acknowledged violation unless --ignore-acknowledged', async () => {
    const critical = violations[0]!.id;
    const ack = await call('POST', `/v1/guard/violations/${critical}/acknowledge`, {
      body: { note: 'Known.' },
    });
    expect(ack.status, ack.text).toBe(200);
    const counted = await checkJson('--project', storefront, '--fail-on', 'critical');
    expect(counted.code).toBe(1);
    expect(counted.result.items[0]).toMatchObject({ id: critical, status: 'acknowledged', failed: true });
    const ignored = await checkJson(
      '--project',
      storefront,
      '--fail-on',
      'critical',
      '--ignore-acknowledged',
    );
    expect(ignored.code).toBe(0);
    expect(ignored.result.summary).toEqual({ violations: 2, findings: 0, budgets: 0, failed: 0 });
  });
});

describe('costgov check on a project scanned over the FOCUS sample', () => {
  let project: string;
  let findings: Array<{ id: string; severity: string }>;

  beforeAll(async () => {
    await withIdentity(async (identityClient) => {
      await identityClient.grantScanCredits({ teamId: rest.teamId, credits: 1n });
      // Required tags most resources lack: one finding each, more than a page of 100.
      await identityClient.setRequiredTags(
        { requiredTags: ['environment', 'application'] },
        { teamId: rest.teamId },
      );
    });
    const connection = await created('/v1/guard/connections', { name: 'sample', provider: 'aws' });
    const upload = await call('POST', `/v1/guard/connections/${connection}/cost-data`, {
      raw: await readFile(join(__dirname, '../../../data/focus/focus_sample_1000.csv'), 'utf8'),
      contentType: 'text/csv',
    });
    expect(upload.status, upload.text).toBe(200);
    project = await created('/v1/guard/projects', { name: 'sample', connection_ids: [connection] });
    const scan = await call('POST', '/v1/guard/scans', { body: { project_id: project } });
    expect(scan.status, scan.text).toBe(202);
    await eventually(async () => {
      const read = await call('GET', `/v1/guard/scans/${scan.body.data.id}`);
      return read.body.data.status === 'completed' ? true : undefined;
    }, 60_000);
    findings = await listAll(`/v1/guard/findings?project_id=${project}&status=open`);
  });

  it('fails on every open finding at or above --fail-on, and reports every open finding', async () => {
    // The threshold is the worst severity the sample's findings have: some fail, the others pass, or
    // this test proves nothing.
    const order = ['low', 'medium', 'high', 'critical'];
    const worst = order.filter((severity) => findings.some((f) => f.severity === severity)).at(-1)!;
    const severe = findings.filter((f) => order.indexOf(f.severity) >= order.indexOf(worst));
    expect(severe.length).toBeGreaterThan(0);
    expect(severe.length).toBeLessThan(findings.length);
    const { code, result } = await checkJson('--project', project, '--fail-on', worst);
    expect(code).toBe(1);
    expect(result.summary).toEqual({
      violations: 0,
      findings: findings.length,
      budgets: 0,
      failed: severe.length,
    });
    expect(
      result.items
        .filter((i) => i.failed)
        .map((i) => i.id)
        .sort(),
    ).toEqual(severe.map((f) => f.id).sort());
    expect(result.items.map((i) => i.id).sort()).toEqual(findings.map((f) => f.id).sort());
    expect(result.items[0]).toMatchObject({ kind: 'finding', resource: { id: expect.any(String) } });
  });

  it('points SARIF results at the scan rules, with GitHub levels by severity', async () => {
    const sarif = join(reports, 'sample.sarif');
    const junit = join(reports, 'sample.xml');
    const { code } = await check(
      '--project',
      project,
      '--fail-on',
      'critical',
      '--sarif',
      sarif,
      '--junit',
      junit,
    );
    expect(code).toBe(severeCount('critical') > 0 ? 1 : 0);
    await validJunit(junit);
    const log = await validSarif(sarif);
    const run = log.runs[0]!;
    const levels = { critical: 'error', high: 'error', medium: 'warning', low: 'note' } as Record<
      string,
      string
    >;
    expect(run.results).toHaveLength(findings.length);
    for (const finding of findings) {
      const result = run.results!.find((r) => r.partialFingerprints?.['costgovItem/v1'] === finding.id)!;
      expect(result.level).toBe(levels[finding.severity]);
      expect(run.tool.driver.rules![result.ruleIndex!]!.id).toBe(result.ruleId);
    }
  });

  it('with --scan, scans the project first and waits for it, progress on stderr', async () => {
    await withIdentity((client) =>
      client.grantScanCredits({ teamId: rest.teamId, credits: 1n }).then(() => {}),
    );
    const scansBefore = (await call('GET', `/v1/guard/scans?project_id=${project}`)).body.meta.total_count;
    const result = await check('--project', project, '--scan', '--fail-on', 'low', '--json');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^scan scn_\w+: (pending|running)$/m);
    expect(result.stderr).toMatch(/^scan scn_\w+: completed: \d+ resources, \d+ findings, 1 credit$/m);
    expect(JSON.parse(result.stdout).summary.findings).toBe(findings.length);
    const scans = (await call('GET', `/v1/guard/scans?project_id=${project}`)).body;
    expect(scans.meta.total_count).toBe(scansBefore + 1);
    expect(scans.data[0].status).toBe('completed');

    // No credit left: the scan is refused, and so the check could not be made.
    const broke = await check('--project', project, '--scan');
    expect(broke.code).toBe(2);
    expect(broke.stderr).toMatch(/^error: could not check project prj_\w+: .*credit/im);
    // A key without scans:write cannot start one.
    const readOnly = await cliWith(
      { COSTGOV_URL: rest.system.url, COSTGOV_API_KEY: rest.readOnlyKey },
      'check',
      '--project',
      project,
      '--scan',
    );
    expect(readOnly.code).toBe(2);
    expect(readOnly.stderr).toMatch(/^error: could not check project prj_\w+: /m);
  });

  const severeCount = (severity: string) => findings.filter((f) => f.severity === severity).length;
});

describe('costgov check when it cannot check (exit 2)', () => {
  it.each([
    ['an unknown project', () => check('--project', 'prj_unknown'), /Project 'prj_unknown' was not found/],
    [
      'a wrong key',
      () =>
        cliWith(
          { COSTGOV_URL: rest.system.url, COSTGOV_API_KEY: 'cg_live_wrongwrongwrongwrongwrongwrong00' },
          'check',
          '--project',
          'prj_x',
        ),
      /^error: could not check project prj_x: /,
    ],
    [
      'no key',
      () => cliWith({ COSTGOV_URL: rest.system.url }, 'check', '--project', 'prj_x'),
      /--api-key or set COSTGOV_API_KEY/,
    ],
    [
      'a key of another team',
      () =>
        cliWith(
          { COSTGOV_URL: rest.system.url, COSTGOV_API_KEY: rest.otherTeamKey },
          'check',
          '--project',
          'prj_x',
        ),
      /was not found/,
    ],
  ])('%s', async (_case, runCheck, message) => {
    const result = await runCheck();
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(message);
  });

  it('an unreachable gateway', async () => {
    const nowhere = `http://127.0.0.1:${await freePort()}`;
    const result = await cliWith(
      { COSTGOV_URL: nowhere, COSTGOV_API_KEY: bootstrapKey },
      'check',
      '--project',
      'prj_x',
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(`error: could not check project prj_x: cannot reach the API at ${nowhere}`);
  });

  it('a report file that cannot be written', async () => {
    const project = await created('/v1/guard/projects', { name: 'unwritable' });
    const result = await check('--project', project, '--junit', join(reports, 'missing-dir', 'r.xml'));
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/cannot write .*missing-dir/);
  });

  it.each([
    [[], /required option '--project <project-id>' not specified/],
    [['--project', 'prj_x', '--fail-on', 'severe'], /argument 'severe' is invalid/],
    [['--project', 'prj_x', '--max-spend-percentage', '0'], /Expected a percentage above 0/],
    [['--project', 'prj_x', '--max-spend-percentage', 'lots'], /Expected a percentage above 0/],
    [['--project', 'prj_x', '--url', 'localhost:8080'], /'--url <url>' argument 'localhost:8080' is invalid/],
    [['--project', 'prj_x', '--scan', '--scan-timeout', '0'], /Expected a whole number of seconds/],
  ])('bad arguments %j', async (argv, message) => {
    const result = await check(...argv);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
  });
});

/** An XML attribute's text as written (the five predefined entities). */
const unescapeXml = (text: string) =>
  text.replace(/&(lt|gt|quot|apos|amp);/g, (_, name: string) => xmlEntities[name]!);
const xmlEntities: Record<string, string> = { lt: '<', gt: '>', quot: '"', apos: "'", amp: '&' };

describe('the reports of a check that could not be made (exit 2)', () => {
  /** JUnit, SARIF and JSON asked for: each must say why, and the upload steps after it find their files. */
  const reportArgs = (name: string) => {
    const junit = join(reports, `${name}.xml`);
    const sarif = join(reports, `${name}.sarif`);
    return { junit, sarif, argv: ['--junit', junit, '--sarif', sarif, '--json'] };
  };
  const asBootstrap = () => ({ COSTGOV_URL: rest.system.url, COSTGOV_API_KEY: bootstrapKey });
  let nowhere = '';
  beforeAll(async () => {
    nowhere = `http://127.0.0.1:${await freePort()}`;
  });

  it.each([
    [
      'an unknown project',
      asBootstrap,
      (reports: string[]) => ['--project', 'prj_unknown', ...reports],
      'prj_unknown',
      /Project 'prj_unknown' was not found/,
    ],
    [
      'a wrong key',
      () => ({ COSTGOV_URL: rest.system.url, COSTGOV_API_KEY: 'cg_live_wrongwrongwrongwrongwrongwrong00' }),
      (reports: string[]) => ['--project', 'prj_x', ...reports],
      'prj_x',
      /Missing or invalid credential/,
    ],
    [
      'no key',
      () => ({ COSTGOV_URL: rest.system.url }),
      (reports: string[]) => ['--project', 'prj_x', ...reports],
      'prj_x',
      /--api-key or set COSTGOV_API_KEY/,
    ],
    [
      'an unreachable gateway',
      () => ({ COSTGOV_URL: nowhere, COSTGOV_API_KEY: bootstrapKey }),
      (reports: string[]) => ['--project', 'prj_x', ...reports],
      'prj_x',
      /cannot reach the API at http:\/\/127\.0\.0\.1:\d+/,
    ],
    [
      'a missing --project',
      asBootstrap,
      (reports: string[]) => [...reports],
      null,
      /required option '--project <project-id>' not specified/,
    ],
    [
      'an unknown --fail-on after the report paths',
      asBootstrap,
      (reports: string[]) => ['--project', 'prj_x', ...reports, '--fail-on', 'severe'],
      'prj_x',
      /argument 'severe' is invalid/,
    ],
  ])(
    '%s: JUnit in error, SARIF of a failed run, JSON verdict error',
    async (name, env, argv, project, why) => {
      const files = reportArgs(name.replace(/\W+/g, '-'));
      const result = await cliWith(env(), 'check', ...argv(files.argv));
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(why);

      const json = JSON.parse(result.stdout) as {
        verdict: string;
        project: unknown;
        error: { message: string };
      };
      expect(validateResult(json), ajv.errorsText(validateResult.errors)).toBe(true);
      expect(json).toMatchObject({ version: 1, verdict: 'error', project: { id: project } });
      expect(json.error.message).toMatch(why);

      const xml = await validJunit(files.junit);
      expect(xml).toMatch(/<testsuites [^>]*tests="1" failures="0" errors="1"/);
      expect(xml).toContain('<testcase classname="costgov.');
      const error = unescapeXml(/<error message="([^"]*)" type="could-not-check"/.exec(xml)?.[1] ?? '');
      expect(error).toMatch(why);
      expect(error).toMatch(project ? `could not check project ${project}: ` : 'could not check: ');

      const log = await validSarif(files.sarif);
      const [run] = log.runs;
      expect(log.runs).toHaveLength(1);
      expect(run!.tool.driver.name).toBe('costgov');
      expect(run!.results).toEqual([]);
      expect(run!.invocations).toHaveLength(1);
      expect(run!.invocations![0]).toMatchObject({ executionSuccessful: false, exitCode: 2 });
      const notifications = run!.invocations![0]!.toolExecutionNotifications!;
      expect(notifications).toHaveLength(1);
      expect(notifications[0]!.level).toBe('error');
      expect(notifications[0]!.message.text).toMatch(why);
      expect(run!.automationDetails?.id).toBe(project ? `costgov-check/${project}/` : undefined);
    },
  );

  it('a report that cannot be written: the other one says so', async () => {
    const project = await created('/v1/guard/projects', { name: 'half-writable' });
    const sarif = join(reports, 'half-writable.sarif');
    const unwritable = join(reports, 'missing-dir', 'r.xml');
    const result = await check('--project', project, '--junit', unwritable, '--sarif', sarif);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/cannot write .*missing-dir/);
    const log = await validSarif(sarif);
    expect(log.runs[0]!.invocations![0]!.executionSuccessful).toBe(false);
    expect(log.runs[0]!.invocations![0]!.toolExecutionNotifications![0]!.message.text).toMatch(
      /cannot write .*missing-dir/,
    );
  });

  it('without reports asked for, writes nothing and keeps stdout empty', async () => {
    const result = await check('--project', 'prj_unknown');
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
  });
});
