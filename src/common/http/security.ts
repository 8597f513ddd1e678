import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import { APP_CONFIG } from '../../config/config.module';
import type { AppConfig } from '../../config/environment';
import { parseCorsOrigins, registerCors } from './cors';
import { registerCrossSiteWriteCheck } from './cross-site-writes';
import { normalizeFastifyErrorBody } from './framework-errors';
import { drainOversizedBodies, refuseDeepBodies } from './request-limits';
import { registerSecurityHeaders } from './security-headers';
import { RejectUnstorableTextPipe } from './storable-text.pipe';

/**
 * Every protection of the HTTP layer, each from its own file: error bodies of the framework's own
 * errors (framework-errors), body limits (request-limits), text PostgreSQL cannot store
 * (storable-text.pipe), security headers (security-headers), CORS (cors), and cookie-authenticated
 * writes from other origins (cross-site-writes). Must run before routes are declared.
 */
export async function registerSecurity(app: NestFastifyApplication, options: { sessionCookie: string }): Promise<void> {
  const config = app.get<AppConfig>(APP_CONFIG);
  const fastify = app.getHttpAdapter().getInstance() as unknown as FastifyInstance;
  const origins = parseCorsOrigins(config.CORS_ORIGINS);

  fastify.addHook('onSend', normalizeFastifyErrorBody);
  fastify.addHook('preParsing', drainOversizedBodies);
  fastify.addHook('preValidation', refuseDeepBodies);
  app.useGlobalPipes(new RejectUnstorableTextPipe());
  registerSecurityHeaders(fastify, { https: config.COOKIE_SECURE });
  await registerCors(app, origins);
  registerCrossSiteWriteCheck(fastify, { cookie: options.sessionCookie, allowedOrigins: origins });
}
