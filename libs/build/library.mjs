// @ts-check
// Builds a workspace library (src/index.ts, run from its folder by its `build` script) into a package
// that other codebases install: dist/ gets an ES module and a CommonJS bundle, each with its
// declarations, the README and the files named, and a package.json for `npm pack ./dist`.
//
// Our own workspace packages (@costgov/*) are TypeScript sources that are never published, so what a
// library uses of them (code and types) is bundled in; every other dependency stays a dependency. The
// package.json in the library's folder keeps pointing at src/, which is how the workspace itself (tsx,
// vitest, tsc, the services' esbuild bundles) reads it.
import { readFileSync, writeFileSync } from 'node:fs';
import { defineConfig } from 'tsdown';

const workspacePackage = /^@costgov\//;

/** @param {{ files?: string[] }} [options] files to ship beside the bundles, each exported as itself */
export function libraryConfig({ files = [] } = {}) {
  const source = JSON.parse(readFileSync('package.json', 'utf8'));
  return defineConfig({
    entry: ['src/index.ts'],
    format: ['esm', 'cjs'],
    platform: 'node',
    target: 'node22',
    outDir: 'dist',
    // Bundle only those; a third-party import missing from the dependencies fails the build.
    deps: { alwaysBundle: [workspacePackage], onlyBundle: [workspacePackage] },
    // Declarations from the library's sources only (its tsconfig.json also takes in tests and scripts).
    tsconfig: 'tsconfig.build.json',
    dts: { eager: true },
    copy: ['README.md', ...files],
    // No advice about slow plugins: on a busy 2-core machine the declarations always take a while.
    inputOptions: { checks: { pluginTimings: false } },
    onSuccess: () =>
      writeFileSync('dist/package.json', `${JSON.stringify(manifest(source, files), null, 2)}\n`),
  });
}

/**
 * The installed package's manifest: the bundles for `import` and `require` (TypeScript finds the
 * .d.mts and .d.cts beside them), and the library's dependencies less the bundled workspace packages.
 * It stays private: the tarball is handed over, not published to a public registry.
 * @param {Record<string, any>} source
 * @param {string[]} files
 */
function manifest(source, files) {
  return {
    name: source.name,
    version: source.version,
    description: source.description,
    license: 'UNLICENSED',
    private: true,
    engines: { node: '>=22' },
    main: './index.cjs',
    module: './index.mjs',
    types: './index.d.cts',
    exports: {
      '.': { import: './index.mjs', require: './index.cjs' },
      ...Object.fromEntries(files.map((file) => [`./${file}`, `./${file}`])),
      './package.json': './package.json',
    },
    dependencies: Object.fromEntries(
      Object.entries(source.dependencies ?? {}).filter(([name]) => !workspacePackage.test(name)),
    ),
  };
}
