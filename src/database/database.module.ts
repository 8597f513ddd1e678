import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { APP_CONFIG } from '../config/config.module';
import { AppConfig } from '../config/environment';
import { dataSourceOptions, openDataSource } from './data-source-options';

/** TypeORM's root module is global by itself: every repository injects the one DataSource. */
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({
        ...dataSourceOptions(config.DATABASE_URL, config.DATABASE_STATEMENT_TIMEOUT),
        migrationsRun: config.MIGRATIONS_RUN,
        statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT,
      }),
      // Our own factory: creates the database if missing and migrates under an advisory lock.
      dataSourceFactory: async (options) => {
        const { url, migrationsRun, statementTimeoutMs } = options as {
          url: string;
          migrationsRun?: boolean;
          statementTimeoutMs?: number;
        };
        return openDataSource(url, { migrate: migrationsRun !== false, statementTimeoutMs });
      },
    }),
  ],
})
export class DatabaseModule {}
