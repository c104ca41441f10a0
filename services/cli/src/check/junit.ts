import junitReportBuilder from 'junit-report-builder';
import type { CheckItem, CheckOutcome } from './gate';
import { couldNotCheckLine, verdictLine } from './report';

const kinds: ReadonlyArray<{ kind: CheckItem['kind']; suite: string }> = [
  { kind: 'violation', suite: 'violations' },
  { kind: 'finding', suite: 'findings' },
  { kind: 'budget', suite: 'budgets' },
];

/**
 * The outcome as JUnit XML, the format CI servers show as test results: a `policy` suite with one
 * test case per rule of the gate (so a project with nothing open still shows what was checked), then
 * one suite per kind with a test case per item, failed when the item makes the gate fail.
 */
export function junitXml(outcome: CheckOutcome, checkedAt: Date): string {
  const builder = junitReportBuilder.newBuilder().name(`costgov check ${outcome.project.id}`);
  const { policy } = outcome;
  const className = (kind: string) => `costgov.${outcome.project.id}.${kind}`;

  const policySuite = builder.testSuite().name('policy').timestamp(checkedAt);
  const rules: Array<{ name: string; kinds: CheckItem['kind'][] }> = [
    { name: `no open violation at ${policy.failOn} or above`, kinds: ['violation'] },
    { name: `no open finding at ${policy.failOn} or above`, kinds: ['finding'] },
  ];
  if (policy.maxSpendPercentage !== undefined)
    rules.push({ name: `no budget at ${policy.maxSpendPercentage} % or more`, kinds: ['budget'] });
  for (const rule of rules) {
    const testCase = policySuite.testCase().className(className('policy')).name(rule.name);
    const failed = outcome.items.filter((item) => item.failed && rule.kinds.includes(item.kind));
    if (failed.length > 0)
      testCase.failure(`${failed.length} failed: ${failed.map((item) => item.id).join(', ')}`, 'policy');
  }
  policySuite.property('verdict', verdictLine(outcome));

  for (const { kind, suite } of kinds) {
    const items = outcome.items.filter((item) => item.kind === kind);
    if (items.length === 0) continue;
    const testSuite = builder.testSuite().name(suite).timestamp(checkedAt);
    for (const item of items) {
      const testCase = testSuite.testCase().className(className(suite)).name(`${item.rule} ${item.id}`);
      if (item.failed) testCase.failure(item.message, item.severity ?? item.rule);
      else testCase.standardOutput(`${item.severity ?? item.status}: ${item.message}`);
    }
  }
  return builder.build();
}

/**
 * The report when the check could not be made (exit 2): the `policy` suite with one test case in
 * error (a fault, not a failed assertion) whose message says why, so that the CI server shows the
 * reason where it would show the verdict, and an upload step finds its file.
 */
export function junitCouldNotCheck(projectId: string | undefined, reason: string, at: Date): string {
  const builder = junitReportBuilder
    .newBuilder()
    .name(['costgov check', projectId].filter(Boolean).join(' '));
  builder
    .testSuite()
    .name('policy')
    .timestamp(at)
    .testCase()
    .className(`costgov.${projectId ?? 'unknown'}.policy`)
    .name('the check could be made')
    .error(couldNotCheckLine(projectId, reason), 'could-not-check');
  return builder.build();
}
