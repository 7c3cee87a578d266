import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The floors of src/ (STYLE.md: "floors only look down"): a folder imports from folders on lower floors
 * only, never from a peer or from above. `config` and `runtime` are the modules src/config.ts and src/runtime.ts.
 * `generated` (files a script writes) is the ground floor; its type imports may name the hand-written
 * types it is written against, since a type import leaves nothing at run time. `telemetry` (the tracing
 * seams over OpenTelemetry's API) is on the ground floor's next one so that every folder above may make spans.
 */
const FLOORS = [
  ['generated'],
  ['catalog', 'contract', 'config', 'telemetry'],
  ['crypto', 'database'],
  ['store', 'query'],
  ['security'],
  ['operations', 'seed', 'symxchange'],
  ['recording'],
  ['core'],
  ['http', 'runtime'],
  ['cli'],
];

/** no-restricted-imports for a module of `folder` on floor `floor`: every folder not below it is off limits. */
function floorRule(folder, floor, prefix) {
  const below = FLOORS.slice(0, floor).flat();
  const forbidden = FLOORS.flat().filter((name) => name !== folder && !below.includes(name));
  if (forbidden.length === 0) return {};
  const message = `src/${folder} is on floor ${floor}; it may import only from ${below.join(', ') || 'nothing in src'} (eslint.config.js FLOORS)`;
  const regex = `^${prefix}(${forbidden.join('|')})(/|\\.js$)`;
  const allowTypeImports = folder === 'generated';
  return {
    'no-restricted-imports': ['error', { patterns: [{ regex, message, allowTypeImports }] }],
    // The same for a dynamic import(): a selector's regular expression cannot hold a slash, so \x2F stands for it.
    'no-restricted-syntax': [
      'error',
      { selector: `ImportExpression[source.value=/${regex.replaceAll('/', '\\x2F')}/]`, message },
    ],
  };
}

const floorConfigs = FLOORS.flatMap((names, floor) =>
  names.map((name) =>
    ['config', 'runtime'].includes(name)
      ? { files: [`src/${name}.ts`], rules: floorRule(name, floor, '\\./') }
      : { files: [`src/${name}/**/*.ts`], rules: floorRule(name, floor, '(\\.\\./)+') },
  ),
);

export default tseslint.config(
  { ignores: ['node_modules/', 'data/', 'dist/', 'packages/*/dist/', 'scratch/', 'bench/results/', 'bench/.data/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      eqeqeq: ['error', 'always'],
      'no-console': 'error',
    },
  },
  { files: ['bench/**', 'scripts/**'], rules: { 'no-console': 'off' } },
  ...floorConfigs,
);
