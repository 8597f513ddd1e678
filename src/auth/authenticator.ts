import { Injectable } from '@nestjs/common';
import { AuthUser, identityOf } from '../common/auth/auth-user';
import { AccountStatusService } from './account-status.service';
import { TokenService } from './token.service';

/**
 * The one decision "who is calling": used by the JWT strategy (every `@Auth()` route) and by the
 * routes Nest does not own (the queue board's hook).
 */
@Injectable()
export class Authenticator {
  constructor(
    private readonly tokens: TokenService,
    private readonly accounts: AccountStatusService,
  ) {}

  /**
   * The caller behind a raw access token, or null (401): signature, algorithm, expiry, token type,
   * the blacklist and the account's current state (active user and tenant, current role).
   * PostgreSQL or Redis failing rejects (the callers answer 503).
   */
  async authenticate(rawToken: string | null): Promise<AuthUser | null> {
    const claims = rawToken ? this.tokens.verify(rawToken) : null;
    if (!claims) return null;
    const [blacklisted, account] = await Promise.all([this.tokens.isBlacklisted(claims.jti), this.accounts.get(claims.sub)]);
    if (blacklisted || !account?.usable) return null;
    return { ...identityOf(account), token: claims };
  }
}
