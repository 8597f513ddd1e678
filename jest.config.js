/** Three tiers: unit specs beside the code, e2e on real PostgreSQL + Redis, system with Orthanc + nginx. */

// The tests run in a clinic's time zone, not UTC, so that no answer comes to depend on the host's
// zone (workers and the processes the tests start inherit it).
process.env.TZ = 'America/Sao_Paulo';

// Dependencies published as ESM only, which Jest's CommonJS runtime cannot require: compiled for tests.
const ESM_ONLY = ['content-disposition'];

const transform = {
  '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
  '^.+\\.js$': ['ts-jest', { tsconfig: { allowJs: true, module: 'commonjs', target: 'es2022' } }],
};
const common = {
  rootDir: __dirname,
  testEnvironment: 'node',
  transform,
  transformIgnorePatterns: [`/node_modules/(?!(${ESM_ONLY.join('|')})/)`],
  moduleFileExtensions: ['ts', 'js', 'json'],
};

module.exports = {
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/lint/**/*.spec.ts'] },
    { ...common, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.e2e-spec.ts'] },
    { ...common, displayName: 'system', testMatch: ['<rootDir>/test/system/**/*.system-spec.ts'] },
    { ...common, displayName: 'fuzz', testMatch: ['<rootDir>/test/fuzz/**/*.fuzz-spec.ts'] },
    { ...common, displayName: 'faults', testMatch: ['<rootDir>/test/faults/**/*.fault-spec.ts'] },
  ],
};
