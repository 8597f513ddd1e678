import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import {
  InjectThrottlerOptions,
  InjectThrottlerStorage,
  ThrottlerGuard,
  ThrottlerModuleOptions,
  ThrottlerStorage,
} from '@nestjs/throttler';
import type { FastifyRequest } from 'fastify';
import { extractAccessToken } from './jwt.strategy';
import { TokenService } from './token.service';

/**
 * Login is limited per client IP; refresh per user (the subject of a validly signed token,
 * expired or not), falling back to the IP. Counters live in Redis, shared by every API process.
 */
@Injectable()
export class SessionThrottlerGuard extends ThrottlerGuard {
  constructor(
    @InjectThrottlerOptions() options: ThrottlerModuleOptions,
    @InjectThrottlerStorage() storage: ThrottlerStorage,
    reflector: Reflector,
    private readonly tokens: TokenService,
  ) {
    super(options, storage, reflector);
  }

  protected async getTracker(request: Record<string, unknown>): Promise<string> {
    const req = request as unknown as FastifyRequest;
    if (req.routeOptions?.url?.endsWith('/refresh')) {
      const token = extractAccessToken(req);
      const claims = token ? this.tokens.verify(token, { ignoreExpiration: true }) : null;
      if (claims) return `user:${claims.sub}`;
    }
    return `ip:${req.ip}`;
  }
}
