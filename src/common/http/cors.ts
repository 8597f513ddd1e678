import fastifyCors from '@fastify/cors';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';

/** `CORS_ORIGINS` as a list; empty means same-origin only (no CORS headers at all). */
export function parseCorsOrigins(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((origin) => origin.trim().replace(/\/+$/, ''))
    .filter(Boolean);
}

/** The CORS policy of the configuration: exact origins, credentials allowed; none means none. */
export async function registerCors(app: NestFastifyApplication, origins: string[]): Promise<void> {
  if (origins.length === 0) return;
  await app.register(
    fastifyCors as never,
    {
      origin: origins,
      credentials: true,
      methods: ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE'],
      allowedHeaders: ['Authorization', 'Content-Type', 'X-Request-Id'],
      exposedHeaders: ['Retry-After', 'X-Request-Id', 'Content-Disposition'],
      maxAge: 600,
    } as never,
  );
}
