import { readdir, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { Option, type Command } from 'commander';
import { DomainError } from '@costgov/errors';
import { withApiOptions, type ApiOptions } from '../api';
import type { Field, Io } from '../output';
import type { Act } from '../program';
import { bytesText, progressOf } from '../progress';
import { uploadFile, type IngestSummaryJson } from '../upload';

interface IngestOptions extends ApiOptions {
  connection: string;
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
 * `costgov ingest FILE|DIR --connection ID`: uploads FOCUS exports through the REST API, one file after
 * another, with progress on stderr and each file's summary on stdout. A refused file is reported with
 * the API's row and column details and the next file is still sent; the exit code is 1 when any file
 * was not stored, 3 when the API cannot be reached (the rest is not attempted).
 */
export function registerIngest(program: Command, act: Act, io: Io): void {
  withApiOptions(program.command('ingest'), io.env)
    .description('upload FOCUS cost exports (.csv, .csv.gz) to a connection through the REST API')
    .argument('<path>', 'a .csv or .csv.gz file, or a folder: every such file in it, by name')
    .addOption(
      new Option('--connection <connection-id>', 'the connection the files belong to').makeOptionMandatory(),
    )
    .action(
      act(async ({ output }, target: string, options: IngestOptions, command: Command) => {
        const globals = command.optsWithGlobals<IngestOptions>();
        const files = await filesOf(target, command);
        const stored: IngestedFile[] = [];
        const failed: string[] = [];
        for (const { path, size } of files) {
          const name = basename(path); // the bar must fit a terminal line; the summary names the path
          try {
            const summary = await uploadFile(
              options,
              options.connection,
              path,
              size,
              progressOf(io.stderr, name, size),
            );
            const file = { file: path, ...summary };
            stored.push(file);
            if (!globals.json && !globals.quiet) {
              if (stored.length + failed.length > 1) io.stdout.write('\n');
              output.show(file, ingestedFields, (f) => f.file);
            }
          } catch (error) {
            if (!(error instanceof DomainError) || error.code === 'service_unavailable') throw error;
            failed.push(path);
            const details = error.details.map(({ field, message }) => `  ${field}: ${message}\n`).join('');
            io.stderr.write(`error: ${path}: ${error.message}\n${details}`);
          }
        }
        if (globals.json || globals.quiet) output.list(stored, ingestedFields, (f) => f.file, '');
        if (failed.length > 0) {
          throw new DomainError(
            'validation_error',
            `${failed.length} of ${files.length} file${files.length === 1 ? ' was' : 's were'} not stored: ${failed.join(', ')}`,
          );
        }
      }),
    );
}
