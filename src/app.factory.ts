import fastifyCookie from '@fastify/cookie';
import { ValidationPipe } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parse as parseQueryString } from 'querystring';
import { text as readText } from 'stream/consumers';
import { ApiModule } from './app.module';
import { AllExceptionsFilter } from './common/errors/all-exceptions.filter';
import { validationExceptionFactory } from './common/errors/validation-errors';
import { AppConfig, loadConfig } from './config/environment';
import { nestLogLevels } from './config/log-levels';
import { RAW_BODY } from './ingestion/webhook-request';
import { loggedUrl } from './common/http/logged-url';
import { FastifyAdapterWithRawRoutes, RawRoutes } from './common/http/raw-routes';
import { frameworkErrors } from './common/http/framework-errors';
import { ApiLogController } from './common/http/log-controller';
import { requestIdOf } from './common/http/request-id';
import {
  BODY_LIMIT_BYTES,
  clientErrorHandler,
  MAX_HEADER_BYTES,
  limitReceiptTime,
  streamedBodyLimit,
} from './common/http/request-limits';
import { registerSecurity } from './common/http/security';
import { ACCESS_COOKIE } from './auth/jwt.strategy';

export { BODY_LIMIT_BYTES };

/**
 * Routes that must see a body even when it is not valid JSON (the image server's webhook: Orthanc's
 * Lua HttpPost may send JSON text as a form). They get `{ [RAW_BODY]: text }` instead of a 400.
 */
export const LENIENT_BODY_ROUTES = new Set(['/api/imgsrv/webhook']);
export { RAW_BODY };

const REDACTED_HEADERS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-viewer-token"]',
  'req.headers["x-webhook-secret"]',
];

function registerBodyParsers(fastify: FastifyInstance): void {
  const strictJson = fastify.getDefaultJsonParser('error', 'error');
  fastify.removeContentTypeParser('application/json');
  fastify.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const lenient = isLenient(request);
    // Clients often send the JSON content type on body-less POSTs (logout, refresh).
    if ((body as string).trim() === '') return done(null, lenient ? {} : undefined);
    void strictJson(request, body as string, (error, value) => {
      if (error && lenient) return done(null, { [RAW_BODY]: body });
      done(error, value);
    });
  });
  // STOW-RS: the body goes to its handler as the stream it is (read part by part, never whole).
  fastify.addContentTypeParser('multipart/related', (request, payload, done) =>
    streamedBodyLimit(request) !== undefined ? done(null, payload) : done(unsupportedMediaType()),
  );
  // Orthanc's Lua HttpPost may send its JSON as a form; nothing else of the API takes forms (a
  // form is what another site's page can post without asking): 415 elsewhere.
  fastify.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (request, body, done) =>
    isLenient(request) ? done(null, { ...parseQueryString(body as string) }) : done(unsupportedMediaType()),
  );
  // Any other type, or none: the webhook reads its body as text whatever its type (decisions.md 3);
  // elsewhere it is refused before a byte of it is read, and an unknown route stays a 404. The
  // preParsing hook (drainOversizedBodies) has already bounded the body.
  fastify.addContentTypeParser('*', (request, payload, done) => {
    if (request.is404) return done(null, undefined);
    if (!isLenient(request)) return done(unsupportedMediaType());
    readText(payload).then((body) => done(null, body), done);
  });
}

function isLenient(request: FastifyRequest): boolean {
  return LENIENT_BODY_ROUTES.has(request.url.split('?')[0]);
}

function unsupportedMediaType(): Error {
  return Object.assign(new Error('Unsupported media type'), { statusCode: 415, code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE' });
}

export function setupSwagger(app: NestFastifyApplication): void {
  const document = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setTitle('Clinical Imaging Archive API')
      .setDescription(
        'Multi-tenant archive and query API for DICOM studies. Authenticate with POST /api/login, ' +
          'then send `Authorization: Bearer <access_token>` (or the pacs_access_token cookie).',
      )
      .setVersion('1')
      .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' })
      .addCookieAuth('pacs_access_token')
      .build(),
  );
  SwaggerModule.setup('api/docs', app, document, { jsonDocumentUrl: 'api/docs-json' });
}

export function createAdapter(config: AppConfig): FastifyAdapterWithRawRoutes {
  return new FastifyAdapterWithRawRoutes(
    {
      trustProxy: config.trustProxy,
      bodyLimit: BODY_LIMIT_BYTES,
      http: { maxHeaderSize: MAX_HEADER_BYTES },
      // Off: limitReceiptTime bounds each request instead, so that an upload may take its minutes.
      requestTimeout: 0,
      clientErrorHandler,
      frameworkErrors,
      routerOptions: { maxParamLength: 500 },
      // No HEAD twin of every GET route: Fastify would run the GET's handler and drop its body, so a
      // HEAD would leave a read in the access trail and have the image server build a download for
      // nobody. HEAD is then a method no route takes: 404 (the viewer gate's raw route answers it).
      exposeHeadRoutes: false,
      logController: new ApiLogController(),
      // The caller's X-Request-Id only when short and harmless (common/http/request-id).
      requestIdHeader: false,
      genReqId: requestIdOf,
      logger:
        config.LOG_LEVEL === 'silent'
          ? false
          : {
              level: config.LOG_LEVEL,
              redact: { paths: REDACTED_HEADERS, censor: '[redacted]' },
              // Fastify's own request serializer, with tokens masked in the URL's query.
              serializers: {
                req: (request: FastifyRequest) => ({
                  method: request.method,
                  url: loggedUrl(request.url),
                  host: request.host,
                  remoteAddress: request.ip,
                  remotePort: request.socket?.remotePort,
                }),
              },
            },
    },
    new RawRoutes((request, response) => limitReceiptTime(request, response)),
  );
}

export const NEST_APP_OPTIONS = {
  bufferLogs: false,
  // Our own parsers (registerBodyParsers) replace Nest's, for the webhook's lenient body.
  bodyParser: false,
} as const;

/** Everything the API needs beyond its modules; used by main.ts and by the test-app builder. */
export async function configureApp(app: NestFastifyApplication): Promise<NestFastifyApplication> {
  const fastify = app.getHttpAdapter().getInstance() as unknown as FastifyInstance;
  registerBodyParsers(fastify);
  await app.register(fastifyCookie as never);
  await registerSecurity(app, { sessionCookie: ACCESS_COOKIE });
  fastify.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.setGlobalPrefix('api');
  app.useGlobalPipes(
    new ValidationPipe({
      transform: true,
      whitelist: true,
      exceptionFactory: validationExceptionFactory,
      validationError: { target: false, value: true },
    }),
  );
  app.useGlobalFilters(new AllExceptionsFilter());
  app.enableShutdownHooks();
  setupSwagger(app);
  return app;
}

/** Builds the API application exactly as production runs it. */
export async function createApiApp(config: AppConfig = loadConfig()): Promise<NestFastifyApplication> {
  const app = await NestFactory.create<NestFastifyApplication>(ApiModule, createAdapter(config), {
    ...NEST_APP_OPTIONS,
    logger: nestLogLevels(config),
  });
  return configureApp(app);
}
