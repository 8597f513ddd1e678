import { Type } from '@nestjs/common';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { getDataSourceToken } from '@nestjs/typeorm';
import Redis from 'ioredis';
import { DataSource } from 'typeorm';
import { configureApp, createAdapter, NEST_APP_OPTIONS } from '../../src/app.factory';
import { ApiModule } from '../../src/app.module';
import { REDIS } from '../../src/common/redis/redis.module';
import { APP_CONFIG } from '../../src/config/config.module';
import { AppConfig, loadConfig } from '../../src/config/environment';
import { HttpClient } from './http';

export interface TestApp {
  app: NestFastifyApplication;
  config: AppConfig;
  http: HttpClient;
  db: DataSource;
  redis: Redis;
  close(): Promise<void>;
}

/**
 * The real API module on the run's database and Redis prefix; `env` overrides configuration
 * (e.g. `{ JWT_TTL: '2' }`), `imports` adds test-only modules (routes of a spec's own).
 * Requests go through Fastify's inject: no port, same pipeline.
 */
export async function createTestApp(env: Record<string, string> = {}, imports: Type[] = []): Promise<TestApp> {
  const config = loadConfig({ ...process.env, ...env });
  const moduleRef = await Test.createTestingModule({ imports: [ApiModule, ...imports] })
    .overrideProvider(APP_CONFIG)
    .useValue(config)
    .compile();
  const app = moduleRef.createNestApplication<NestFastifyApplication>(createAdapter(config), {
    ...NEST_APP_OPTIONS,
    logger: false,
  });
  await configureApp(app);
  await app.init();
  await app.getHttpAdapter().getInstance().ready();
  return {
    app,
    config,
    http: new HttpClient(app),
    db: app.get<DataSource>(getDataSourceToken()),
    redis: app.get<Redis>(REDIS),
    close: () => app.close(),
  };
}
