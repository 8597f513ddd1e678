import { join } from 'path';
import { Client } from 'pg';
import { DataSource, DataSourceOptions } from 'typeorm';
import { MigrationExecutor } from 'typeorm/migration/MigrationExecutor';

/** Settings of every connection of the pool: PostgreSQL's statement_timeout and work_mem (0: the server's). */
export interface ConnectionSettings {
  statementTimeoutMs?: number;
  workMemMb?: number;
}

export function dataSourceOptions(databaseUrl: string, settings: ConnectionSettings = {}): DataSourceOptions {
  const { statementTimeoutMs = 0, workMemMb = 0 } = settings;
  return {
    type: 'postgres',
    url: databaseUrl,
    // Every *.entity file under src/ (compiled: dist/src/): the shared ones in ./entities, and each
    // feature's own beside its repository; this layer imports no feature.
    entities: [join(__dirname, '..', '**', '*.entity.{ts,js}')],
    migrations: [join(__dirname, 'migrations', '*.{ts,js}')],
    migrationsTableName: 'migrations',
    migrationsTransactionMode: 'each',
    synchronize: false,
    // TypeORM's error log prints a failed query's parameters (password hashes, signatures);
    // failures reach the error filter, which logs them without parameters.
    logging: false,
    extra: {
      max: 20,
      connectionTimeoutMillis: 5000,
      ...(statementTimeoutMs > 0 ? { statement_timeout: statementTimeoutMs } : {}),
      // Sent in the startup message, as `PGOPTIONS` would be. No parallel workers: the service's
      // statements read index ranges of at most thousands of rows, and starting workers took longer
      // (a one-match search page at 3,000,000 studies: 25.5 ms with 2 workers, 0.2 ms without). No
      // JIT either: it starts on estimated costs, large wherever a plan does not know its LIMIT (a
      // 0.3 ms walk spent 11-13 ms compiling first). Prepared list statements are planned for each
      // execution's values. Dates are read and written as YYYY-MM-DD whatever the server's
      // DateStyle (`SQL, DMY` gave 15/01/2024 and 500s).
      options: [
        '-c max_parallel_workers_per_gather=0',
        '-c plan_cache_mode=force_custom_plan',
        '-c jit=off',
        '-c DateStyle=ISO,YMD',
        ...(workMemMb > 0 ? [`-c work_mem=${workMemMb}MB`] : []),
      ].join(' '),
    },
  };
}

/** Creates the database named in the URL when it does not exist yet. */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!name) return;
  url.pathname = '/postgres';
  const client = new Client({ connectionString: url.toString() });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount === 0) {
      await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`).catch((error) => {
        // Another process created it between our check and our CREATE.
        if (error?.code !== '42P04') throw error;
      });
    }
  } finally {
    await client.end();
  }
}

// Any constant works; it only has to be the same for every process of this service.
const MIGRATION_LOCK_KEY = 7_300_421;

/** Applies pending migrations; an advisory lock keeps several starting processes from racing. */
export async function runMigrations(dataSource: DataSource): Promise<string[]> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    // On this connection, whatever the pool's statement timeout: an index rebuild or a backfill of
    // a million rows takes minutes, and so does waiting here for another process that migrates.
    await runner.query('SET statement_timeout = 0');
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    const executor = new MigrationExecutor(dataSource, runner);
    executor.transaction = 'each';
    const applied = await executor.executePendingMigrations();
    return applied.map((m) => m.name);
  } finally {
    await runner.query('RESET statement_timeout').catch(() => undefined);
    await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    await runner.release();
  }
}

export async function openDataSource(
  databaseUrl: string,
  options: { migrate: boolean } & ConnectionSettings,
): Promise<DataSource> {
  await ensureDatabase(databaseUrl);
  const dataSource = await new DataSource(dataSourceOptions(databaseUrl, options)).initialize();
  if (options.migrate) await runMigrations(dataSource);
  return dataSource;
}
