import { HttpException, HttpStatus } from '@nestjs/common';

/**
 * The contract's error bodies. Services throw these; the global filter sends their body as is.
 * Keep every literal of the spec's Errors table here, so it is written once.
 */
export class ApiError extends HttpException {
  constructor(status: number, body: Record<string, unknown>) {
    super(body, status);
  }
}

export const Errors = {
  unauthenticated: () => new ApiError(HttpStatus.UNAUTHORIZED, { message: 'Unauthenticated.' }),
  invalidCredentials: () => new ApiError(HttpStatus.UNAUTHORIZED, { error: 'Credenciais inválidas.' }),
  refreshWindowExpired: () =>
    new ApiError(HttpStatus.UNAUTHORIZED, { message: 'Token Refresh window has expired' }),
  tokenBlacklisted: () =>
    new ApiError(HttpStatus.UNAUTHORIZED, { message: 'The token has been blacklisted' }),
  accountDisabled: () => new ApiError(HttpStatus.FORBIDDEN, { error: 'Conta desativada.' }),
  forbidden: () => new ApiError(HttpStatus.FORBIDDEN, { error: 'Forbidden' }),
  /** A cookie-authenticated write from a page of another origin (see common/http/cross-site-writes). */
  crossSiteWrite: () =>
    new ApiError(HttpStatus.FORBIDDEN, {
      error: 'Forbidden',
      message: 'Cross-site request refused: the Origin is neither this API nor one of CORS_ORIGINS.',
    }),
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
