import { Inject, Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { createSecretKey } from 'crypto';
import type { FastifyRequest } from 'fastify';
import { ExtractJwt, Strategy } from 'passport-jwt';
import type { AccessTokenClaims, AuthUser } from '../common/auth/auth-user';
import { APP_CONFIG } from '../config/config.module';
import { AppConfig } from '../config/environment';
import { AccountStatusService } from './account-status.service';
import { TokenService } from './token.service';

export const ACCESS_COOKIE = 'pacs_access_token';

export const cookieToken = (request: FastifyRequest): string | null =>
  (request as FastifyRequest & { cookies?: Record<string, string | undefined> }).cookies?.[ACCESS_COOKIE] ??
  null;

/** The bearer header wins over the cookie. */
export const extractAccessToken = ExtractJwt.fromExtractors<FastifyRequest>([
  ExtractJwt.fromAuthHeaderAsBearerToken() as (request: FastifyRequest) => string | null,
  cookieToken,
]);

@Injectable()
export class JwtStrategy extends PassportStrategy(Strategy, 'jwt') {
  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly tokens: TokenService,
    private readonly accounts: AccountStatusService,
  ) {
    super({
      jwtFromRequest: extractAccessToken as never,
      // A KeyObject, not the string: given a string, jsonwebtoken first tries to parse it as a PEM
      // public key on every verify (and throws), which cost a fifth of an authenticated request's CPU.
      secretOrKey: createSecretKey(Buffer.from(config.JWT_SECRET)) as unknown as Buffer,
      algorithms: ['HS256'],
      ignoreExpiration: false,
    });
  }

  /** Returning null makes the guard answer 401. */
  async validate(claims: AccessTokenClaims): Promise<AuthUser | null> {
    if (claims?.typ !== 'access' || typeof claims.jti !== 'string' || typeof claims.sub !== 'string') {
      return null;
    }
    const [blacklisted, account] = await Promise.all([
      this.tokens.isBlacklisted(claims.jti),
      this.accounts.get(claims.sub),
    ]);
    if (blacklisted || !account?.usable) return null;
    return {
      id: account.id,
      email: account.email,
      name: account.name,
      tenant_id: account.tenant_id,
      unit_id: account.unit_id,
      is_super_admin: account.is_super_admin,
      is_tenant_admin: account.is_tenant_admin,
      token: claims,
    };
  }
}
