/**
 * Writes a generated FOCUS export, for the benchmark and demos:
 *   npx tsx services/costs/src/cost-data/generate-cli.ts --rows 1000000 --month 2025-03 [--seed 1]
 *     [--version 1.0|1.1|1.2|1.3] [--currency USD] [--resources 100000] [--gzip] [--out focus.csv]
 * `--resources N` spreads the rows over N resources of a large tenant's estate (mixed services, some
 * untagged or without a team tag, previous-generation instances, non-production ones running around
 * the clock). The file streams to `--out` (or stdout) with bounded memory; a long one reports its
 * progress on stderr.
 */
import { createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { createGzip } from 'node:zlib';
import { focusVersions, type FocusVersion } from './focus-columns';
import { estateResources, focusCsv } from './generate';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '1000' },
    month: { type: 'string', default: new Date().toISOString().slice(0, 7) },
    seed: { type: 'string', default: '1' },
    version: { type: 'string', default: '1.2' },
    currency: { type: 'string', default: 'USD' },
    resources: { type: 'string' },
    gzip: { type: 'boolean', default: false },
    out: { type: 'string' },
  },
});

const wholeNumber = (name: string, text: string) => {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) {
    console.error(`--${name} must be a positive whole number, not '${text}'`);
    process.exit(2);
  }
  return value;
};

if (!(focusVersions as readonly string[]).includes(values.version)) {
  console.error(`--version must be one of ${focusVersions.join(', ')}`);
  process.exit(2);
}
const rows = wholeNumber('rows', values.rows);
const resources = values.resources === undefined ? undefined : wholeNumber('resources', values.resources);
const started = performance.now();
let reported = started;
const file = focusCsv({
  rows,
  month: values.month,
  seed: Number(values.seed),
  version: values.version as FocusVersion,
  currency: values.currency,
  resources,
  // Every 5 s of a long file: how far it is and how fast it goes.
  progress(written) {
    const now = performance.now();
    if (now - reported < 5_000) return;
    reported = now;
    const perSecond = written / ((now - started) / 1000);
    console.error(
      `focus:generate: ${written} of ${rows} rows (${Math.round((written / rows) * 100)} %, ${Math.round(perSecond)} rows/s)`,
    );
  },
});
const out = values.out === undefined ? process.stdout : createWriteStream(values.out);
void (values.gzip ? pipeline(file, createGzip(), out) : pipeline(file, out)).then(
  () => {
    if (performance.now() - started < 5_000 && values.out === undefined) return;
    const seconds = (performance.now() - started) / 1000;
    console.error(
      `focus:generate: ${rows} rows${resources === undefined ? '' : ` over ${estateResources({ rows, resources })} resources`} in ${seconds.toFixed(1)} s${values.out === undefined ? '' : ` to ${values.out}`}`,
    );
  },
  (error: unknown) => {
    console.error(`focus:generate: ${String(error)}`);
    process.exitCode = 1;
  },
);
