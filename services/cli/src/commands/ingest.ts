import { readdir, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { Option, type Command } from 'commander';
import { DomainError, type FieldViolation } from '@costgov/errors';
import { withApiOptions, type ApiOptions } from '../api';
import type { Field, Io } from '../output';
import type { Act } from '../program';
import { bytesText, progressOf } from '../progress';
import {
  contentTypeOf,
  partText,
  uploadBodyOf,
  uploadFile,
  type IngestSummaryJson,
  type UploadPart,
} from '../upload';

interface IngestOptions extends ApiOptions {
  connection: string;
  parts?: boolean;
  json?: boolean;
  quiet?: boolean;
}

/** One stored file: the API's summary with the file it came from. */
export interface IngestedFile extends IngestSummaryJson {
  file: string;
}

const isCostFile = (name: string) => /\.csv(\.gz)?$/i.test(name);

const money = (value: number) => value.toFixed(2);

const ingestedFields: readonly Field<IngestedFile>[] = [
  ['file', (f) => f.file],
  ['connection', (f) => f.connection_id],
  ['rows', (f) => String(f.rows)],
  ['focus version', (f) => f.focus_version],
  ['billing periods', (f) => f.billing_periods.join(', ') || '-'],
  [
    'totals',
    (f) =>
      f.totals
        .map((t) => `${t.currency} billed ${money(t.billed_cost)}, effective ${money(t.effective_cost)}`)
        .join('; ') || '-',
  ],
  ['rows replaced', (f) => String(f.rows_replaced)],
  ['bytes', (f) => bytesText(f.bytes)],
  ['duration', (f) => `${(f.duration_ms / 1000).toFixed(1)} s`],
  ['warnings', (f) => f.warnings.map((w) => `${w.code}: ${w.message}`).join('; ') || '-'],
];

/**
 * The files `target` names: itself, or every .csv and .csv.gz file directly in it when it is a folder,
 * sorted by name (monthly exports named by date then arrive in order).
 */
async function filesOf(target: string, command: Command): Promise<Array<{ path: string; size: number }>> {
  const found = await stat(target).catch(() => undefined);
  if (!found)
    command.error(`error: no such file or folder: ${target}`, { exitCode: 2, code: 'costgov.noFile' });
  if (found.isFile()) return [{ path: target, size: found.size }];
  const names = (await readdir(target, { withFileTypes: true }))
    .filter((entry) => entry.isFile() && isCostFile(entry.name))
    .map((entry) => entry.name)
    .sort();
  if (names.length === 0)
    command.error(`error: no .csv or .csv.gz files in ${target}`, { exitCode: 2, code: 'costgov.noFile' });
  return Promise.all(
    names.map(async (name) => ({ path: join(target, name), size: (await stat(join(target, name))).size })),
  );
}

/**
 * Each part's first line in the body of an upload of `parts` (one line break between two parts), as far
 * as the part holding line `until`.
 */
async function partStarts(parts: readonly UploadPart[], until: number): Promise<number[]> {
  const starts: number[] = [];
  let line = 1;
  for (const part of parts) {
    if (line > until) break;
    starts.push(line);
    let breaks = 0;
    for await (const chunk of partText(part)) {
      for (let at = chunk.indexOf(10); at >= 0; at = chunk.indexOf(10, at + 1)) breaks++;
    }
    line += breaks + 1;
  }
  return starts;
}

/**
 * The API names a problem by the row and line of the whole body; with parts, the line becomes the
 * part's own (`part-2.csv line 9, column BilledCost (row 1005 of the upload)`).
 */
async function inParts(details: FieldViolation[], parts: readonly UploadPart[]): Promise<FieldViolation[]> {
  const located = /^row (\d+) \(line (\d+)\)(.*)$/;
  const lastLine = Math.max(0, ...details.map(({ field }) => Number(located.exec(field)?.[2] ?? 0)));
  if (parts.length < 2 || lastLine === 0) return details;
  const starts = await partStarts(parts, lastLine).catch(() => undefined);
  if (!starts) return details;
  return details.map(({ field, message }) => {
    const at = located.exec(field);
    if (!at) return { field, message };
    const line = Number(at[2]);
    let index = starts.length - 1;
    while (index > 0 && starts[index]! > line) index--;
    const where = `${basename(parts[index]!.path)} line ${line - starts[index]! + 1}${at[3]}`;
    return { field: `${where} (row ${at[1]} of the upload)`, message };
  });
}

/**
 * The billing periods a file stored that a later file of the same run stored again: the later one
 * replaced those rows (a period is replaced whole by each upload), what parts of one export sent one by
 * one would do.
 */
function replacedPeriods(stored: readonly IngestedFile[]): string[] {
  const problems: string[] = [];
  for (const [index, later] of stored.entries()) {
    for (const earlier of stored.slice(0, index)) {
      const shared = later.billing_periods.filter((period) => earlier.billing_periods.includes(period));
      if (shared.length > 0)
        problems.push(
          `${later.file} replaced billing period${shared.length === 1 ? '' : 's'} ${shared.join(', ')} ` +
            `that ${earlier.file} had stored`,
        );
    }
  }
  return problems;
}

/**
 * `costgov ingest FILE|DIR --connection ID`: uploads FOCUS exports through the REST API, one file after
 * another, with progress on stderr and each file's summary on stdout. A refused file is reported with
 * the API's row and column details and the next file is still sent; the exit code is 1 when any file
 * was not stored, or when a file replaced a billing period an earlier file of the run had stored (the
 * parts of one export sent one by one: `--parts` sends them as one upload), 3 when the API cannot be
 * reached (the rest is not attempted).
 */
export function registerIngest(program: Command, act: Act, io: Io): void {
  withApiOptions(program.command('ingest'), io.env)
    .description('upload FOCUS cost exports (.csv, .csv.gz) to a connection through the REST API')
    .argument('<path>', 'a .csv or .csv.gz file, or a folder: every such file in it, by name')
    .addOption(
      new Option('--connection <connection-id>', 'the connection the files belong to').makeOptionMandatory(),
    )
    .addOption(
      new Option(
        '--parts',
        'the files are the parts of one export (a billing period split into files, all .csv or all ' +
          '.csv.gz): sent as one upload, so that each period is stored whole',
      ),
    )
    .action(
      act(async ({ output }, target: string, options: IngestOptions, command: Command) => {
        const globals = command.optsWithGlobals<IngestOptions>();
        const files = await filesOf(target, command);
        if (options.parts && new Set(files.map((f) => contentTypeOf(f.path))).size > 1)
          command.error('error: --parts sends the files as one body: they must be all .csv or all .csv.gz', {
            exitCode: 2,
            code: 'costgov.mixedParts',
          });
        const uploads: Array<{ name: string; parts: UploadPart[] }> = options.parts
          ? [
              {
                name: files.length === 1 ? files[0]!.path : `${target} (${files.length} parts)`,
                parts: files,
              },
            ]
          : files.map((f) => ({ name: f.path, parts: [f] }));
        const stored: IngestedFile[] = [];
        const failed: string[] = [];
        for (const { name, parts } of uploads) {
          // The bar must fit a terminal line; the summary names the path.
          const label = parts.length === 1 ? basename(name) : `${basename(target)} (${parts.length} parts)`;
          try {
            const body = await uploadBodyOf(parts);
            const summary = await uploadFile(
              options,
              options.connection,
              body,
              progressOf(io.stderr, label, body.size),
            );
            const file = { file: name, ...summary };
            stored.push(file);
            if (!globals.json && !globals.quiet) {
              if (stored.length + failed.length > 1) io.stdout.write('\n');
              output.show(file, ingestedFields, (f) => f.file);
            }
          } catch (error) {
            if (!(error instanceof DomainError) || error.code === 'service_unavailable') throw error;
            failed.push(name);
            const details = (await inParts(error.details, parts))
              .map(({ field, message }) => `  ${field}: ${message}\n`)
              .join('');
            io.stderr.write(`error: ${name}: ${error.message}\n${details}`);
          }
        }
        if (globals.json || globals.quiet) output.list(stored, ingestedFields, (f) => f.file, '');
        if (failed.length > 0) {
          throw new DomainError(
            'validation_error',
            `${failed.length} of ${uploads.length} file${uploads.length === 1 ? ' was' : 's were'} not stored: ${failed.join(', ')}`,
          );
        }
        const replaced = replacedPeriods(stored);
        if (replaced.length > 0) {
          throw new DomainError(
            'validation_error',
            `${replaced.join('; ')}: each upload replaces its billing periods whole. If these files are ` +
              'parts of one export, send them together: costgov ingest DIR --parts',
          );
        }
      }),
    );
}
