// Compiles one service entry point (default src/main.ts, run from the service's folder) into
// dist/<name>.js for `node` without tsx. The workspace packages (@costgov/*, TypeScript) are bundled in;
// third-party packages stay external, installed as production dependencies, so that OpenTelemetry can
// still instrument grpc-js and pg as they are required, and packages that read their own files
// (PGlite's WebAssembly) find them.
//
//   node ../../libs/build/bundle.mjs [src/main.ts ...]
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { build } from 'esbuild';

const entries = process.argv.slice(2);
const outdir = path.resolve('dist');

/** Bare imports other than our own workspace packages are required at run time from node_modules. */
const thirdPartyExternal = {
  name: 'third-party-external',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) =>
      args.path.startsWith('@costgov/') ? undefined : { path: args.path, external: true },
    );
  },
};

/**
 * Code that reads files beside itself (`path.join(__dirname, 'db/migrations')`) keeps reading them from
 * its source folder: each module's __dirname becomes that folder, relative to the bundle. The image
 * ships those files (SQL migrations, the OpenAPI document) at their source paths.
 */
const sourceDirname = {
  name: 'source-dirname',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      if (!source.includes('__dirname')) return undefined;
      const relative = path.relative(outdir, path.dirname(args.path)).split(path.sep).join('/');
      return {
        loader: 'ts',
        contents: source.replace(
          /\b__dirname\b/g,
          `require('node:path').resolve(__dirname, ${JSON.stringify(relative)})`,
        ),
      };
    });
  },
};

await build({
  entryPoints: entries.length > 0 ? entries : ['src/main.ts'],
  outdir,
  bundle: true,
  platform: 'node',
  target: 'node24',
  format: 'cjs',
  sourcemap: true,
  logLevel: 'warning',
  plugins: [thirdPartyExternal, sourceDirname],
});
