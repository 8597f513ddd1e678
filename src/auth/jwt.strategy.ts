import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import type { FastifyRequest } from 'fastify';
import { ExtractJwt } from 'passport-jwt';
import { Strategy } from 'passport';
import type { AuthUser } from '../common/auth/auth-user';
import { Authenticator } from './authenticator';

export const ACCESS_COOKIE = 'pacs_access_token';

export const cookieToken = (request: FastifyRequest): string | null =>
  (request as FastifyRequest & { cookies?: Record<string, string | undefined> }).cookies?.[ACCESS_COOKIE] ?? null;

/** The bearer header wins over the cookie. */
export const extractAccessToken = ExtractJwt.fromExtractors<FastifyRequest>([
  ExtractJwt.fromAuthHeaderAsBearerToken() as (request: FastifyRequest) => string | null,
  cookieToken,
]);

type Verify = (request: FastifyRequest, done: (error: unknown, user?: AuthUser | null) => void) => void;

/**
 * A passport strategy that hands the request to its verify callback (Nest's `validate`) and
 * turns the answer into passport's: a user, a 401 challenge, or an error.
 */
class RequestStrategy extends Strategy {
  constructor(private readonly verify: Verify) {
    super();
  }

  authenticate(request: unknown): void {
    this.verify(request as FastifyRequest, (error, user) => {
      if (error) return this.error(error);
      if (!user) return this.fail(401);
      this.success(user);
    });
  }
}

/** `@Auth()`: the caller is whoever Authenticator finds behind the request's access token. */
@Injectable()
export class JwtStrategy extends PassportStrategy(RequestStrategy, 'jwt') {
  constructor(private readonly authenticator: Authenticator) {
    super();
  }

  /** Returning null makes the guard answer 401. */
  validate(request: FastifyRequest): Promise<AuthUser | null> {
    return this.authenticator.authenticate(extractAccessToken(request));
  }
}
