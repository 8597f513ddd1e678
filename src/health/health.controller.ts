import { Controller, Get, Inject } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, HealthIndicatorService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import Redis from 'ioredis';
import { REDIS } from '../common/redis/redis.module';
import { withTimeout } from '../common/with-timeout';

export const DEPENDENCY_DOWN = 'not answering';

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
    return this.health.check([() => this.databaseCheck(), () => this.redisCheck()]);
  }

  // A public endpoint: a down dependency is named, never described (a driver's message tells
  // addresses, ports and versions). The logs of the failing calls have the details.
  private async databaseCheck() {
    const result = await this.database.pingCheck('database', { timeout: 2000 }).catch(() => null);
    return result?.database?.status === 'up' ? result : this.indicators.check('database').down({ message: DEPENDENCY_DOWN });
  }

  private async redisCheck() {
    const indicator = this.indicators.check('redis');
    try {
      const answer = await withTimeout(this.redis.ping(), 2000, 'timeout');
      return answer === 'PONG' ? indicator.up() : indicator.down({ message: DEPENDENCY_DOWN });
    } catch {
      return indicator.down({ message: DEPENDENCY_DOWN });
    }
  }
}
