import { writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { InvalidArgumentError, Option, type Command, type CommanderError } from 'commander';
import { DomainError } from '@costgov/errors';
import { version } from '../../package.json';
import { answer, guardClient, withApiOptions, type ApiOptions } from '../api';
import { retryDuration } from '../arguments';
import { formatDuration } from '../duration';
import { checkProject, type CheckPolicy } from '../check/gate';
import { junitCouldNotCheck, junitXml } from '../check/junit';
import { couldNotCheckLine, errorJson, reportJson, reportText } from '../check/report';
import { defaultSarifPath, sarifCouldNotCheck, sarifLog } from '../check/sarif';
import { scanAndWait } from '../check/scan';
import { severities, type Severity } from '../check/severity';
import type { Io } from '../output';
import type { Act } from '../program';
import { defaultRetryBudgetMs } from '../retries';

/** What a pipeline branches on: the gate passed, the policy failed, or the project could not be checked. */
export const checkExitCodes = { pass: 0, failed: 1, couldNotCheck: 2 } as const;

interface CheckOptions extends ApiOptions {
  project: string;
  failOn: Severity;
  maxSpendPercentage?: number;
  ignoreAcknowledged?: boolean;
  junit?: string;
  sarif?: string;
  sarifPath: string;
  scan?: boolean;
  scanTimeout: number;
  /** Milliseconds all waits on 429 and 503 may add up to. */
  retryFor: number;
}

/** How often --scan reads the scan while it runs. */
const scanPollMs = 1000;

/** A whole number of seconds from 1 to a day. */
function seconds(text: string): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < 1 || value > 86_400)
    throw new InvalidArgumentError('Expected a whole number of seconds from 1 to 86400, like 600.');
  return value;
}

/** A percentage above 0, decimals allowed (e.g. 90 or 99.5). */
function percentage(text: string): number {
  const value = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || !(value > 0) || value > 100_000)
    throw new InvalidArgumentError('Expected a percentage above 0, like 90 or 99.5.');
  return value;
}

/**
 * `costgov check --project ID`: the CI gate. Exit 0 when nothing open reaches the policy, 1 when
 * something does (the table lists it), 2 when the check could not be made: bad arguments (commander's
 * usage errors), no key, an unreachable gateway, a refused key, an unknown project, a server error, a
 * 429 or 503 that outlasts `--retry-for`, or a report file that cannot be written. A gate must never
 * pass because it could not look. Then the reports asked for still say so (`reportCouldNotCheck`).
 */
export function registerCheck(program: Command, act: Act, io: Io): void {
  const check = program.command('check');
  // A usage error found once --junit, --sarif or --json were read (a missing --project, a bad value
  // after them): commander has printed it, and the reports say it before the error ends the run.
  check.exitOverride((error: CommanderError) => {
    if (error.exitCode !== 0) {
      const options = check.optsWithGlobals<Partial<CheckOptions> & { json?: boolean }>();
      reportCouldNotCheck(io, options, error.message.replace(/^error: /, ''));
    }
    throw error;
  });
  withApiOptions(check, io.env)
    .description(
      "fail a pipeline on a project's open violations and findings at or above a severity, or on budgets over a spend limit (exit 0 pass, 1 failed, 2 could not check)",
    )
    .addOption(new Option('--project <project-id>', 'the project to check (prj_...)').makeOptionMandatory())
    .addOption(
      new Option(
        '--fail-on <severity>',
        'lowest severity that fails, on one scale for violations and findings: info < low < medium < warning < high < critical',
      )
        .choices(severities)
        .default('high'),
    )
    .addOption(
      new Option(
        '--max-spend-percentage <n>',
        'also fail when a budget (not archived) has used N % or more of its amount this period',
      ).argParser(percentage),
    )
    .option('--ignore-acknowledged', 'count only open violations, not acknowledged ones')
    .option(
      '--scan',
      'scan the project first and wait for it (the key needs scans:write; one credit a connection)',
    )
    .addOption(
      new Option('--scan-timeout <seconds>', 'how long --scan waits for the scan to finish')
        .argParser(seconds)
        .default(600),
    )
    .addOption(
      new Option(
        '--retry-for <duration>',
        'how long, in all, to wait out a rate limit (429) or an unavailable backend (503) and retry, like 30s, 2m; 0 for no retries',
      )
        .argParser(retryDuration)
        .default(defaultRetryBudgetMs, formatDuration(defaultRetryBudgetMs)),
    )
    .option('--junit <file>', 'write a JUnit XML report (one test case per policy rule and per item)')
    .option('--sarif <file>', 'write a SARIF 2.1.0 log for GitHub code scanning')
    .addOption(
      new Option('--sarif-path <path>', 'repository file the SARIF results point at').default(
        defaultSarifPath(io.env),
        'the workflow file of GITHUB_WORKFLOW_REF, else README.md',
      ),
    )
    .action(
      act(async ({ exitWith }, options: CheckOptions, command: Command) => {
        const globals = command.optsWithGlobals<{ json?: boolean; quiet?: boolean }>();
        const policy: CheckPolicy = {
          failOn: options.failOn,
          maxSpendPercentage: options.maxSpendPercentage,
          ignoreAcknowledged: options.ignoreAcknowledged ?? false,
        };
        // The answer retries gave up on is the one the check then fails with: it leads the error line.
        let gaveUp: string | undefined;
        try {
          const client = guardClient(options, {
            budgetMs: options.retryFor,
            say: (line) => io.stderr.write(`${line}\n`),
            gaveUp: (reason) => {
              gaveUp = reason;
            },
          });
          if (options.scan)
            await scanAndWait(client, options.project, {
              timeoutMs: options.scanTimeout * 1000,
              intervalMs: scanPollMs,
              progress: (line) => {
                if (!globals.quiet) io.stderr.write(`${line}\n`);
              },
            });
          const outcome = await checkProject(client, options.project, policy);
          if (options.junit) await writeReport(options.junit, junitXml(outcome, new Date()));
          if (options.sarif) {
            const rules = await answer(client.GET('/v1/guard/rules'));
            await writeReport(
              options.sarif,
              sarifLog(outcome, rules.data, { artifactPath: options.sarifPath, version }),
            );
          }
          if (globals.json) io.stdout.write(`${JSON.stringify(reportJson(outcome), null, 2)}\n`);
          else if (globals.quiet) io.stdout.write(`${outcome.passed ? 'pass' : 'fail'}\n`);
          else io.stdout.write(reportText(outcome));
          exitWith(outcome.passed ? checkExitCodes.pass : checkExitCodes.failed);
        } catch (error) {
          const text = error instanceof Error ? error.message : String(error);
          const message = gaveUp ? `${gaveUp}: ${text}` : text;
          const details = error instanceof DomainError ? error.details : [];
          io.stderr.write(
            `error: ${couldNotCheckLine(options.project, message)}\n${details.map(({ field, message: text }) => `  ${field}: ${text}\n`).join('')}`,
          );
          const reason = [message, ...details.map(({ field, message: text }) => `${field}: ${text}`)].join(
            '; ',
          );
          reportCouldNotCheck(io, { ...options, json: globals.json }, reason);
          exitWith(checkExitCodes.couldNotCheck);
        }
      }),
    );
}

/**
 * What a run that could not check leaves behind: the JUnit and SARIF reports it was asked for, saying
 * why (an upload step after it finds its file, and shows the reason), and with --json the error result
 * on stdout. A report that cannot be written is one more line on stderr; the exit stays 2. Synchronous,
 * because commander's usage errors end the run from a synchronous callback.
 */
function reportCouldNotCheck(
  io: Io,
  options: Partial<Pick<CheckOptions, 'project' | 'junit' | 'sarif'>> & { json?: boolean },
  reason: string,
): void {
  const reports = [
    options.junit && {
      path: options.junit,
      text: () => junitCouldNotCheck(options.project, reason, new Date()),
    },
    options.sarif && {
      path: options.sarif,
      text: () => sarifCouldNotCheck(options.project, reason, { version }),
    },
  ];
  for (const report of reports) {
    if (!report) continue;
    try {
      writeFileSync(report.path, report.text(), 'utf8');
    } catch (error) {
      io.stderr.write(`error: cannot write ${report.path}: ${(error as Error).message}\n`);
    }
  }
  if (options.json) io.stdout.write(`${JSON.stringify(errorJson(options.project, reason), null, 2)}\n`);
}

/** Writes a report file; a path that cannot be written is a DomainError naming it. */
async function writeReport(path: string, text: string): Promise<void> {
  try {
    await writeFile(path, text, 'utf8');
  } catch (error) {
    throw new DomainError('bad_request', `cannot write ${path}: ${(error as Error).message}`);
  }
}
