import { HttpException, HttpStatus } from '@nestjs/common';

/**
 * Every error body of the contract, written once: services throw them through `Errors`, the global
 * filter answers with them, and the routes Nest does not own (the queue board, /metrics, the
 * viewer's raw validate route) send them as they are.
 */
export const ErrorBodies = {
  unauthenticated: { message: 'Unauthenticated.' },
  invalidCredentials: { error: 'Credenciais inválidas.' },
  refreshWindowExpired: { message: 'Token Refresh window has expired' },
  tokenBlacklisted: { message: 'The token has been blacklisted' },
  accountDisabled: { error: 'Conta desativada.' },
  forbidden: { error: 'Forbidden' },
  crossSiteWrite: {
    error: 'Forbidden',
    message: 'Cross-site request refused: the Origin is neither this API nor one of CORS_ORIGINS.',
  },
  badRequest: { message: 'Bad request.' },
  malformedBody: { message: 'Malformed request body.' },
  notFound: { message: 'Not found.' },
  methodNotAllowed: { message: 'Method not allowed.' },
  payloadTooLarge: { message: 'Payload too large.' },
  unsupportedMediaType: { message: 'Unsupported media type.' },
  tooManyAttempts: { message: 'Too Many Attempts.' },
  serviceUnavailable: { message: 'Service unavailable.' },
  serverError: { message: 'Server error.' },
  /** A study's image or rendered frame the image server cannot give. */
  imageNotAvailable: { message: 'Image not available' },
  thumbnailNotReady: { message: 'Thumbnail not ready' },
  /** A study's ZIP the image server cannot give. */
  archiveNotAvailable: { message: 'Archive not available' },
  /** The image server's webhook (the Laravel-era contract's own wording). */
  webhookUnauthorized: { error: 'Unauthorized' },
  webhookIdMissing: { error: 'ID not provided' },
  /** The image server's door question (webhook.lua) is not the expected JSON object. */
  doorRequestInvalid: { error: 'Invalid door request' },
  /** The viewer's token validation (nginx auth_request) and token issue. */
  viewerTokenMissing: { error: 'Missing token' },
  viewerTokenInvalid: { error: 'Invalid or expired token' },
  viewerStudyNotFound: { error: 'Study not found' },
} as const;

export type ErrorBody = (typeof ErrorBodies)[keyof typeof ErrorBodies];

/** An error with the contract's body. Services throw these; the global filter sends the body as is. */
export class ApiError extends HttpException {
  constructor(status: number, body: Record<string, unknown>) {
    super(body, status);
  }
}

export const Errors = {
  unauthenticated: () => new ApiError(HttpStatus.UNAUTHORIZED, ErrorBodies.unauthenticated),
  invalidCredentials: () => new ApiError(HttpStatus.UNAUTHORIZED, ErrorBodies.invalidCredentials),
  refreshWindowExpired: () => new ApiError(HttpStatus.UNAUTHORIZED, ErrorBodies.refreshWindowExpired),
  tokenBlacklisted: () => new ApiError(HttpStatus.UNAUTHORIZED, ErrorBodies.tokenBlacklisted),
  accountDisabled: () => new ApiError(HttpStatus.FORBIDDEN, ErrorBodies.accountDisabled),
  forbidden: () => new ApiError(HttpStatus.FORBIDDEN, ErrorBodies.forbidden),
  /** A cookie-authenticated write from a page of another origin (see common/http/cross-site-writes). */
  crossSiteWrite: () => new ApiError(HttpStatus.FORBIDDEN, ErrorBodies.crossSiteWrite),
  serviceUnavailable: () => new ApiError(HttpStatus.SERVICE_UNAVAILABLE, ErrorBodies.serviceUnavailable),
  imageNotAvailable: () => new ApiError(HttpStatus.NOT_FOUND, ErrorBodies.imageNotAvailable),
  thumbnailNotReady: () => new ApiError(HttpStatus.NOT_FOUND, ErrorBodies.thumbnailNotReady),
  archiveNotAvailable: () => new ApiError(HttpStatus.NOT_FOUND, ErrorBodies.archiveNotAvailable),
  webhookUnauthorized: () => new ApiError(HttpStatus.UNAUTHORIZED, ErrorBodies.webhookUnauthorized),
  webhookIdMissing: () => new ApiError(HttpStatus.BAD_REQUEST, ErrorBodies.webhookIdMissing),
  doorRequestInvalid: () => new ApiError(HttpStatus.BAD_REQUEST, ErrorBodies.doorRequestInvalid),
  /** `{ message: "<What> not found." }`, e.g. notFound('Study'). */
  notFound: (what: string) => new ApiError(HttpStatus.NOT_FOUND, { message: `${what} not found.` }),
  /** 422 with the spec's shape; `errors` keyed by the request's own field names. */
  validation: (errors: Record<string, string[]>) => {
    const messages = Object.values(errors).flat();
    const first = messages[0] ?? 'The given data was invalid.';
    const more = messages.length - 1;
    const message = more > 0 ? `${first} (and ${more} more error${more > 1 ? 's' : ''})` : first;
    return new ApiError(HttpStatus.UNPROCESSABLE_ENTITY, { message, errors });
  },
  fieldInvalid: (field: string, message: string) => Errors.validation({ [field]: [message] }),
};
