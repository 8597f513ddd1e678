import './config/v8-flags';
import './config/async-resource-bind';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { WorkerModule } from './app.module';
import { ConfigError, loadConfig } from './config/environment';
import { nestLogLevels } from './config/log-levels';

/** The queue worker: an application context without HTTP. Run as many as the load needs. */
async function bootstrap(): Promise<void> {
  const config = loadConfig();
  const app = await NestFactory.createApplicationContext(WorkerModule, {
    logger: nestLogLevels(config),
  });
  app.enableShutdownHooks();
  new Logger('Worker').log(`Worker ${process.pid} listening on queues (prefix ${config.QUEUE_PREFIX})`);
}

bootstrap().catch((error) => {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exit(1);
});
