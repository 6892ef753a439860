// Lint rules that catch bugs, not taste (layout is Prettier's job): ESLint's and typescript-eslint's
// recommended sets, with type information so that a forgotten `await` or a promise passed where a
// callback is expected fails the check.
import { readdirSync } from 'node:fs'
import js from '@eslint/js'
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript'
import { importX } from 'eslint-plugin-import-x'
import globals from 'globals'
import tseslint from 'typescript-eslint'

// Module boundaries (CONTRIBUTING.md): src/modules/<name>/ may import `*.repository.ts` only from its own folder.
// One zone per module folder, so a new module is covered without editing this file.
const modules = readdirSync(new URL('./src/modules/', import.meta.url), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
const repositoryZones = modules.map((name) => ({
  target: `./src/modules/${name}`,
  from: `./src/modules/!(${name})/**/*.repository.ts`,
  message: `A module reads another module's tables through that module's service, not its repository (CONTRIBUTING.md, "Module boundaries").`,
}))

export default tseslint.config(
  { ignores: ['dist/', 'coverage/', 'data/', 'bench/results/', 'admin/dist/', 'clients/typescript/schema.d.ts'] },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { project: './tsconfig.check.json', tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // tsc reports unused names (noUnusedLocals, noUnusedParameters), with the same `_` convention.
      '@typescript-eslint/no-unused-vars': 'off',
      // Fastify plugins and route handlers are async by contract, with or without an await inside.
      '@typescript-eslint/require-await': 'off',
      // `let log` read by a closure before it is assigned once (app.ts) is not a missed const.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // The shop refuses control characters in text on purpose, with regular expressions that name them.
      'no-control-regex': 'off',
      // Passing on an error of unknown type (a callback's `err`) is fine; rejecting with a string is not.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingAny: true, allowThrowingUnknown: true }],
    },
  },
  {
    // Module boundaries, checked on the server's sources: no runtime import cycles (an `import type`, erased at
    // build time under verbatimModuleSyntax, may close a loop), and no reaching into another module's repository.
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      // The files whose imports are followed; `./x.js` in an import resolves to `x.ts` through tsconfig.json.
      'import-x/extensions': ['.ts'],
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: `${import.meta.dirname}/tsconfig.json` })],
    },
    rules: {
      // ignoreExternal: no cycle runs through node_modules, and following packages' imports cost the rule
      // about 14 s instead of 1 s.
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'import-x/no-restricted-paths': ['error', { basePath: import.meta.dirname, zones: repositoryZones }],
    },
  },
  {
    // Migrations take Kysely<any> on purpose: they must not depend on today's table types.
    files: ['src/db/migrations/**', 'src/db/migrate.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // Tests and the benchmark read JSON bodies (`any`) and check them with expect; asserting a type
    // on them is documentation, not an unchecked cast in the service.
    files: ['test/**', 'bench/**'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: globals.node },
  },
  {
    // The dashboard (admin/) is a browser app with its own tsconfig; so is the test of its data providers.
    files: ['admin/**/*.{ts,tsx}', 'test/admin/data-providers.sqlite.test.ts'],
    languageOptions: {
      globals: globals.browser,
      parserOptions: { project: './admin/tsconfig.json', tsconfigRootDir: import.meta.dirname },
    },
  },
)
