/**
 * Writes a generated FOCUS export to stdout, for the benchmark and demos:
 *   npx tsx services/costs/src/cost-data/generate-cli.ts --rows 1000000 --month 2025-03 [--seed 1]
 *     [--version 1.0|1.1|1.2|1.3] [--currency USD] [--gzip] > focus.csv
 */
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { createGzip } from 'node:zlib';
import { focusVersions, type FocusVersion } from './focus-columns';
import { focusCsv } from './generate';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '1000' },
    month: { type: 'string', default: new Date().toISOString().slice(0, 7) },
    seed: { type: 'string', default: '1' },
    version: { type: 'string', default: '1.2' },
    currency: { type: 'string', default: 'USD' },
    gzip: { type: 'boolean', default: false },
  },
});

if (!(focusVersions as readonly string[]).includes(values.version)) {
  throw new Error(`--version must be one of ${focusVersions.join(', ')}`);
}
const file = focusCsv({
  rows: Number(values.rows),
  month: values.month,
  seed: Number(values.seed),
  version: values.version as FocusVersion,
  currency: values.currency,
});
void (values.gzip ? pipeline(file, createGzip(), process.stdout) : pipeline(file, process.stdout));
