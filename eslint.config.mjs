// npm run lint: ESLint's and typescript-eslint's recommended rules over the TypeScript of the app,
// its tests, benchmarks, sandbox and scripts, and the admin page's browser modules. Formatting is
// Prettier's (npm run format), which ESLint leaves alone.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      'coverage/**',
      'bench/out/**',
      '.ci/out/**',
      'extensions/email-pixel/dist/**',
      'test/e2e/screenshots/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
      // a variable a closure reads before its one assignment cannot be const
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    // tests reach into fixtures and fakes with loose types, and load modules by path
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off', '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // CommonJS probes loaded with node --require
    files: ['**/*.cjs', 'jest.config.js'],
    languageOptions: { sourceType: 'commonjs', globals: { ...globals.node } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // the embedded page and the simulated storefront run in the browser (and a web worker)
    files: ['src/admin-ui/**/*.js', 'sandbox/fake-shop/storefront-assets/**/*.js'],
    languageOptions: { sourceType: 'module', globals: { ...globals.browser, ...globals.worker } },
  },
  {
    // the notify-me block's script, loaded by Shopify on the storefront as a classic script
    files: ['extensions/notify-me/assets/**/*.js'],
    languageOptions: { sourceType: 'script', ecmaVersion: 2017, globals: { ...globals.browser } },
  },
);
