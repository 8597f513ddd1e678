import type { FastifyRequest } from 'fastify';
import { AccountStatusService } from '../../auth/account-status.service';
import { extractAccessToken } from '../../auth/jwt.strategy';
import { TokenService } from '../../auth/token.service';

export type CallerCheck = 'unauthenticated' | 'forbidden' | 'super_admin';

/**
 * The same decision as `@Auth('super_admin')` (JwtStrategy + SuperAdminGuard) for routes that Nest
 * does not own: bearer header first, else the pacs_access_token cookie; signature, expiry, token
 * type, blacklist and the account's current state (active user and tenant, current role).
 */
export async function checkSuperAdmin(
  request: FastifyRequest,
  tokens: TokenService,
  accounts: AccountStatusService,
): Promise<CallerCheck> {
  const raw = extractAccessToken(request);
  if (!raw) return 'unauthenticated';
  const claims = tokens.verify(raw);
  if (!claims) return 'unauthenticated';
  const [blacklisted, account] = await Promise.all([tokens.isBlacklisted(claims.jti), accounts.get(claims.sub)]);
  if (blacklisted || !account?.usable) return 'unauthenticated';
  return account.is_super_admin ? 'super_admin' : 'forbidden';
}
