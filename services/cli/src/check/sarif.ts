import { SarifBuilder, SarifResultBuilder, SarifRuleBuilder, SarifRunBuilder } from 'node-sarif-builder';
import type { components } from '@costgov/client';
import type { CheckItem, CheckOutcome } from './gate';
import { maxSpendRule } from './gate';
import { couldNotCheckLine } from './report';
import { sarifLevelOf, type Severity } from './severity';

type Rule = components['schemas']['Rule'];

export const toolName = 'costgov';

const automationId = (projectId: string) => `costgov-check/${projectId}/`;

/**
 * Where results point in the repository. GitHub code scanning shows a result only with a physical
 * location, and the problems are in the cloud, not in a file: by default the workflow that runs the
 * gate (GITHUB_WORKFLOW_REF is `owner/repo/.github/workflows/x.yml@ref`), else README.md.
 */
export function defaultSarifPath(env: Record<string, string | undefined>): string {
  const workflow = /^[^/]+\/[^/]+\/(.+?)@/.exec(env.GITHUB_WORKFLOW_REF ?? '')?.[1];
  return workflow ?? 'README.md';
}

/** The rules the results refer to: the scan rules, and the gate's own for violations and budgets. */
function rulesOf(scanRules: readonly Rule[]): SarifRuleBuilder[] {
  const rule = (id: string, short: string, full: string, help: string, level: string, tags: string[]) =>
    new SarifRuleBuilder({
      id,
      name: id,
      shortDescription: { text: short },
      fullDescription: { text: full },
      help: { text: help },
      defaultConfiguration: { level: level as 'error' | 'warning' | 'note' },
      properties: { tags: ['cost', ...tags] },
    });
  return [
    ...scanRules.map((r) =>
      rule(r.id, r.title, r.description, r.recommendation, sarifLevelOf(r.severity), [r.category]),
    ),
    rule(
      'budget_threshold_breach',
      'Budget threshold crossed',
      "The project's spend crossed a threshold of one of its budgets in the current period (info below 80 %, warning from 80 %, critical from 100 %).",
      'Review the spend of the project, or raise the budget if the spend is expected; resolve the violation once handled.',
      'error',
      ['budget'],
    ),
    rule(
      maxSpendRule,
      'Budget over the pipeline’s spend limit',
      'A budget of the project has used at least the share of its amount that the pipeline allows (--max-spend-percentage).',
      'Bring the spend down or raise the budget before deploying more.',
      'error',
      ['budget'],
    ),
  ];
}

const levelOf = (item: CheckItem): 'error' | 'warning' | 'note' =>
  item.severity === null ? 'error' : sarifLevelOf(item.severity as Severity);

/**
 * The outcome as SARIF 2.1.0 for GitHub code scanning: every open violation and finding, and each
 * budget over the spend limit, as a result at `artifactPath` (line 1) with a logical location naming
 * the project and the cloud resource; the item id is the fingerprint, so an alert stays one alert
 * across runs and closes when the item is no longer open.
 */
export function sarifLog(
  outcome: CheckOutcome,
  scanRules: readonly Rule[],
  { artifactPath, version }: { artifactPath: string; version: string },
): string {
  const run = new SarifRunBuilder({
    automationDetails: { id: automationId(outcome.project.id) },
  }).initSimple({ toolDriverName: toolName, toolDriverVersion: version });
  for (const rule of rulesOf(scanRules)) run.addRule(rule);

  for (const item of outcome.items.filter((i) => i.kind !== 'budget' || i.failed)) {
    const project = `${outcome.project.name} (${outcome.project.id})`;
    run.addResult(
      new SarifResultBuilder({
        ruleId: item.rule,
        level: levelOf(item),
        message: { text: `${item.message} [${item.kind} ${item.id} of project ${project}]` },
        locations: [
          {
            physicalLocation: { artifactLocation: { uri: artifactPath }, region: { startLine: 1 } },
            logicalLocations: [
              {
                name: item.resource?.id ?? item.id,
                fullyQualifiedName: `${outcome.project.id}/${item.kind}s/${item.id}`,
                kind: 'resource',
              },
            ],
          },
        ],
        partialFingerprints: { 'costgovItem/v1': item.id },
        properties: {
          kind: item.kind,
          severity: item.severity,
          status: item.status,
          gateFailed: item.failed,
          ...(item.percentageUsed === undefined ? {} : { percentageUsed: item.percentageUsed }),
        },
      }),
    );
  }
  return logOf(run);
}

function logOf(run: SarifRunBuilder): string {
  const log = new SarifBuilder({
    $schema: 'https://json.schemastore.org/sarif-2.1.0.json',
    version: '2.1.0',
  });
  log.addRun(run);
  return log.buildSarifJsonString({ indent: true });
}

/**
 * The log when the check could not be made (exit 2): a run of costgov marked as failed
 * (`executionSuccessful: false`, the reason as an error notification) with no results. GitHub code
 * scanning takes such a run as an unsuccessful execution: it shows the reason on its tool status page
 * and keeps the alerts open, where an empty log of a successful run would close them all.
 */
export function sarifCouldNotCheck(
  projectId: string | undefined,
  reason: string,
  { version }: { version: string },
): string {
  const run = new SarifRunBuilder({
    ...(projectId ? { automationDetails: { id: automationId(projectId) } } : {}),
    invocations: [
      {
        executionSuccessful: false,
        exitCode: 2,
        toolExecutionNotifications: [
          {
            level: 'error',
            descriptor: { id: 'could-not-check' },
            message: { text: couldNotCheckLine(projectId, reason) },
          },
        ],
      },
    ],
  }).initSimple({ toolDriverName: toolName, toolDriverVersion: version });
  return logOf(run);
}
