import { existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { rename, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';

/** Where the vitest global setup tells the workers the image is. */
export const pgliteTemplateVariable = 'COSTGOV_TEST_PGLITE_TEMPLATE';

/**
 * Vitest global setup: the image of an empty PGlite cluster, written once per PGlite build to the
 * system's temporary folder, which `freshDb` starts every in-memory database from (0.5 s instead of the
 * 2.5 s initdb takes). Hand-written because PGlite's dumpDataDir/loadDataDir is the whole mechanism.
 */
export default async function makePgliteTemplate(): Promise<void> {
  // Named after the PGlite build it was made by (its data file's size and time), so an upgrade makes a new one.
  const resolve = createRequire(path.join(process.cwd(), 'package.json')).resolve;
  const build = statSync(resolve('@electric-sql/pglite/pglite.data'));
  const file = path.join(tmpdir(), `costgov-pglite-${build.size}-${Math.round(build.mtimeMs)}-trgm.tar`);
  if (!existsSync(file)) {
    const db = await PGlite.create(undefined, { extensions: { pg_trgm } });
    const image = await db.dumpDataDir('none');
    await db.close();
    const partial = `${file}.${process.pid}`;
    await writeFile(partial, Buffer.from(await image.arrayBuffer()));
    await rename(partial, file); // whole or not at all, for a run started beside this one
  }
  process.env[pgliteTemplateVariable] = file;
}
