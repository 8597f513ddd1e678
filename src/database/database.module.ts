import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { APP_CONFIG } from '../config/config.module';
import { AppConfig } from '../config/environment';
import { ConnectionSettings, dataSourceOptions, openDataSource } from './data-source-options';

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
        return openDataSource(url, { migrate: migrationsRun !== false, ...settings });
      },
    }),
  ],
})
export class DatabaseModule {}
