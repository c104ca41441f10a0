// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// A package is used through its index: another package's src/ or test/ is imported neither by name
// (@costgov/<name>/src/...) nor by a relative path that climbs out of the importing package.
const throughTheIndex =
  'import @costgov/<name> and export what is needed from its src/index.ts (a test helper shared by packages belongs in @costgov/testing)';
const byName = {
  regex: '^@costgov/[^/]+/(src|test)(/|$)',
  message: `Another package's src/ and test/ are its own: ${throughTheIndex}.`,
};
// Where a file sits decides how many `../` leave its package (libs/<name>/src/a.ts: two), so one block
// per depth below the package root.
const deepestFolder = 12;
const packageRooms = Array.from({ length: deepestFolder }, (_, depth) => ({
  files: [`{libs,services}/*/${'*/'.repeat(depth)}*.{ts,mts,cts}`],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          byName,
          {
            regex: `^(\\.\\.(/|$)){${depth + 1}}`,
            message: `This relative path leaves its package: ${throughTheIndex}.`,
          },
        ],
      },
    ],
  },
}));

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      '**/dist/**',
      'libs/contracts/src/gen/**',
      'libs/client/src/gen/**',
      '.data/**',
      '**/*.js',
      '**/*.mjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
      'no-restricted-imports': ['error', { patterns: [byName] }],
    },
  },
  ...packageRooms,
);
