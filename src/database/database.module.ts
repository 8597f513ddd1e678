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
        ...dataSourceOptions(config.DATABASE_URL),
        migrationsRun: config.MIGRATIONS_RUN,
      }),
      // Our own factory: creates the database if missing and migrates under an advisory lock.
      dataSourceFactory: async (options) => {
        const { url, migrationsRun } = options as { url: string; migrationsRun?: boolean };
        return openDataSource(url, { migrate: migrationsRun !== false });
      },
    }),
  ],
})
export class DatabaseModule {}
