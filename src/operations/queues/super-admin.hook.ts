import type { FastifyRequest } from 'fastify';
import { Authenticator, extractAccessToken } from '../../auth';

export type CallerCheck = 'unauthenticated' | 'forbidden' | 'super_admin';

/**
 * The same decision as `@Auth('super_admin')` (JwtStrategy + SuperAdminGuard) for routes that Nest
 * does not own: the same Authenticator on the same token (bearer header first, else the
 * pacs_access_token cookie), then the role.
 */
export async function checkSuperAdmin(request: FastifyRequest, authenticator: Authenticator): Promise<CallerCheck> {
  const caller = await authenticator.authenticate(extractAccessToken(request));
  if (!caller) return 'unauthenticated';
  return caller.is_super_admin ? 'super_admin' : 'forbidden';
}
