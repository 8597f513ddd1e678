// The lint gate (`npm run lint`, run by .ci/run): the layering rules of docs/architecture.md
// ("Where each rule lives") as build failures, plus promises nobody awaits. Formatting is
// Prettier's (.prettierrc.json); eslint-config-prettier keeps ESLint out of it.
import prettier from 'eslint-config-prettier';
import importPlugin from 'eslint-plugin-import';
import tseslint from 'typescript-eslint';

/** Folders under src/ that are features; everything else there is shared or the composition root. */
const FEATURES = [
  'admin',
  'audit',
  'auth',
  'clinics',
  'exchange',
  'health',
  'imgsrv',
  'ingestion',
  'operations',
  'patients',
  'reports',
  'shares',
  'studies',
  'tenant',
  'viewer',
];
/** Shared code: imports no feature. */
const SHARED = ['common', 'config', 'database'];

/**
 * A feature's public surface: its Nest module and its index.ts (what the module exports, and the
 * types that go with it). Another feature imports nothing else of it.
 */
const PUBLIC_FILES = (feature) => [`./index.ts`, `./${feature}.module.ts`];

/**
 * Imports across features that bypass the public surface today, each with its reason. Keep this
 * short: every entry is a debt.
 */
// None today: the list code studies and patients once shared lives in src/database/list.
const CROSS_FEATURE_EXCEPTIONS = {};

/** Libraries only some places may import: the rest of the code goes through those places. */
const LIBRARY_HOMES = [
  {
    names: ['typeorm', '@nestjs/typeorm'],
    home: ['src/**/*.repository.ts', 'src/**/*.entity.ts', 'src/database/**'],
    message: 'SQL lives in repositories (*.repository.ts) and src/database/; tables are described in *.entity.ts.',
  },
  {
    names: ['axios'],
    home: ['src/imgsrv/**'],
    message: 'Only the image-server client (src/imgsrv/) speaks HTTP to Orthanc.',
  },
  {
    names: ['sharp'],
    home: ['src/ingestion/thumbnails.ts', 'src/common/validation/image-data-url.ts'],
    message: 'Images are decoded only by the thumbnail renderer and the image validator.',
  },
  {
    names: ['bull', '@nestjs/bull'],
    home: [
      'src/common/queues/**',
      'src/ingestion/ingestion-queue.service.ts',
      'src/ingestion/ingestion.worker.ts',
      'src/operations/**',
      'src/reports/report-filing.queue.ts',
      'src/reports/report-filing.worker.ts',
    ],
    message:
      'Queues are reached through the queue code (src/common/queues, the ingestion queue and worker) operations and the report filing queue.',
  },
];

function restrictedLibraries(except) {
  const libraries = LIBRARY_HOMES.filter((library) => library !== except);
  return [
    'error',
    {
      patterns: libraries.map((library) => ({
        group: library.names.flatMap((name) => [name, `${name}/*`]),
        message: library.message,
      })),
    },
  ];
}

function featureZones() {
  const zones = [];
  for (const feature of FEATURES) {
    for (const other of FEATURES.filter((name) => name !== feature)) {
      const exceptions = CROSS_FEATURE_EXCEPTIONS[other]?.[feature] ?? [];
      zones.push({
        target: `./src/${other}/**/*`,
        from: `./src/${feature}`,
        except: [...PUBLIC_FILES(feature), ...exceptions],
        message: `Import ${feature} through its public surface (src/${feature}/index.ts or ${feature}.module.ts).`,
      });
    }
  }
  zones.push({
    target: SHARED.map((folder) => `./src/${folder}/**/*`),
    from: FEATURES.map((feature) => `./src/${feature}`),
    message: 'Shared code (common, config, database) imports no feature.',
  });
  zones.push({
    target: [...FEATURES, ...SHARED].map((folder) => `./src/${folder}/**/*`),
    from: ['./src/app.module.ts'],
    message: 'Only the entry points import the root module.',
  });
  return zones;
}

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      'coverage/**',
      'viewer/**',
      'vendor/**',
      'test-artifacts/**',
      'test/lint/fixtures/**',
    ],
  },
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.base],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // Only what the gate is for; adopting a recommended rule set is a change of its own.
      '@typescript-eslint/no-floating-promises': 'error',
    },
  },
  {
    files: ['src/**/*.ts'],
    plugins: { import: importPlugin },
    settings: { 'import/resolver': { node: { extensions: ['.ts', '.js', '.json'] } } },
    rules: {
      'no-restricted-imports': restrictedLibraries(null),
      'import/no-restricted-paths': ['error', { zones: featureZones() }],
    },
  },
  // A library's home may import it (and nothing else restricted). The homes do not overlap.
  ...LIBRARY_HOMES.map((library) => ({
    files: library.home,
    rules: { 'no-restricted-imports': restrictedLibraries(library) },
  })),
  // Specs build their fixtures with whatever library they need.
  { files: ['src/**/*.spec.ts'], rules: { 'no-restricted-imports': 'off' } },
  prettier,
);
