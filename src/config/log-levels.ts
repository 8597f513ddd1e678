import { LogLevel } from '@nestjs/common';
import { AppConfig } from './environment';

/** Nest's logger levels for LOG_LEVEL (Fastify's request log uses LOG_LEVEL directly). */
export function nestLogLevels(config: AppConfig): LogLevel[] | false {
  const order: LogLevel[] = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'];
  const map: Record<string, number> = { fatal: 0, error: 1, warn: 2, info: 3, debug: 4, trace: 5 };
  return config.LOG_LEVEL === 'silent' ? false : order.slice(0, (map[config.LOG_LEVEL] ?? 3) + 1);
}
