import { Controller, Get, Inject } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  HealthCheck,
  HealthCheckService,
  HealthIndicatorService,
  TypeOrmHealthIndicator,
} from '@nestjs/terminus';
import Redis from 'ioredis';
import { REDIS } from '../common/redis/redis.module';
import { withTimeout } from '../common/with-timeout';

@ApiTags('operations')
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly indicators: HealthIndicatorService,
    @Inject(REDIS) private readonly redis: Redis,
  ) {}

  @Get()
  @HealthCheck()
  @ApiOperation({ summary: 'Public: 200 when PostgreSQL and Redis answer, 503 otherwise' })
  check() {
    return this.health.check([
      () => this.database.pingCheck('database', { timeout: 2000 }),
      () => this.redisCheck(),
    ]);
  }

  private async redisCheck() {
    const indicator = this.indicators.check('redis');
    try {
      const answer = await withTimeout(this.redis.ping(), 2000, 'timeout');
      return answer === 'PONG' ? indicator.up() : indicator.down({ message: 'unexpected answer' });
    } catch (error) {
      return indicator.down({ message: (error as Error).message });
    }
  }
}
