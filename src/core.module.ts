import { Module } from '@nestjs/common';
import { QueuesModule } from './common/queues/queues.module';
import { RedisModule } from './common/redis/redis.module';
import { ConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';

/**
 * What every process (API, worker, CLI) shares: configuration, PostgreSQL, Redis and the Bull
 * queues. The image-server client is not here: only the modules that speak to it import it.
 */
@Module({
  imports: [ConfigModule, DatabaseModule, RedisModule, QueuesModule],
  exports: [ConfigModule, DatabaseModule, RedisModule, QueuesModule],
})
export class CoreModule {}
