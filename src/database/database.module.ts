import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { APP_CONFIG } from '../config/config.module';
import { AppConfig } from '../config/environment';
import { ConnectionSettings, dataSourceOptions, openDataSource } from './data-source-options';

/** Per DataSource: what must still reach PostgreSQL when it is destroyed (beforeDatabaseClose). */
const lastWrites = new WeakMap<DataSource, Set<() => Promise<void>>>();

/**
 * Runs `write` when the application's DataSource is destroyed at shutdown, before its connections
 * close: for writes buffered until the very end, such as the access trail's last flush, which must
 * come after the HTTP server has closed (requests still running record until then).
 */
export function beforeDatabaseClose(dataSource: DataSource, write: () => Promise<void>): void {
  let writes = lastWrites.get(dataSource);
  if (!writes) lastWrites.set(dataSource, (writes = new Set()));
  writes.add(write);
}

function closingAfterLastWrites(dataSource: DataSource): DataSource {
  const destroy = dataSource.destroy.bind(dataSource);
  // TypeOrmModule calls this in its own onApplicationShutdown, ordered against other modules' only by registration.
  dataSource.destroy = async () => {
    await Promise.allSettled([...(lastWrites.get(dataSource) ?? [])].map((write) => write()));
    return destroy();
  };
  return dataSource;
}

/** TypeORM's root module is global by itself: every repository injects the one DataSource. */
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => {
        const settings: ConnectionSettings = {
          statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT,
          workMemMb: config.DATABASE_WORK_MEM_MB,
        };
        return { ...dataSourceOptions(config.DATABASE_URL, settings), migrationsRun: config.MIGRATIONS_RUN, settings };
      },
      // Our own factory: creates the database if missing and migrates under an advisory lock.
      dataSourceFactory: async (options) => {
        const { url, migrationsRun, settings } = options as {
          url: string;
          migrationsRun?: boolean;
          settings?: ConnectionSettings;
        };
        return closingAfterLastWrites(await openDataSource(url, { migrate: migrationsRun !== false, ...settings }));
      },
    }),
  ],
})
export class DatabaseModule {}
