import { randomBytes } from 'crypto';
import { loadConfig } from '../../src/config/environment';
import { openDataSource } from '../../src/database/data-source-options';

/**
 * One database and one Redis prefix per test run, so runs never see each other's data.
 * Values set on process.env here reach every test file.
 */
export default async function globalSetup(): Promise<void> {
  const runId = `${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const base = new URL(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  base.pathname = `/pacs_test_${runId}`;
  Object.assign(process.env, {
    NODE_ENV: 'test',
    DATABASE_URL: base.toString(),
    QUEUE_PREFIX: `pacs_test_${runId}`,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    JWT_SECRET: 'test-jwt-secret-0123456789abcdef-0123456789abcdef',
    WEBHOOK_SECRET: 'test-webhook-secret-0123456789',
    PACS_TEST_RUN_ID: runId,
  });
  const dataSource = await openDataSource(loadConfig().DATABASE_URL, { migrate: true });
  // The database's own defaults are not the usual ones, as a clinic's DBA might set them: no answer
  // may depend on the server's DateStyle or time zone (the service pins the DateStyle it reads).
  await dataSource.query(`ALTER DATABASE "pacs_test_${runId}" SET datestyle = 'SQL, DMY'`);
  await dataSource.query(`ALTER DATABASE "pacs_test_${runId}" SET timezone = 'America/Sao_Paulo'`);
  await dataSource.destroy();
}
