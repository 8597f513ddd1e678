import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { AuthGuard } from '@nestjs/passport';
import { isDependencyDown } from '../errors/all-exceptions.filter';
import { Errors } from '../errors/api-errors';
import type { AuthUser } from './auth-user';

/** Bearer header first, else the pacs_access_token cookie; 401 `{message: Unauthenticated.}`. */
@Injectable()
export class JwtAuthGuard extends AuthGuard('jwt') {
  handleRequest<TUser = AuthUser>(error: unknown, user: TUser | false): TUser {
    // PostgreSQL or Redis down while checking the session: a 503 to retry, not a 401 that makes
    // the client drop a session that is still valid.
    if (error && isDependencyDown(error)) throw error;
    if (error || !user) throw Errors.unauthenticated();
    return user;
  }
}

function callerOf(context: ExecutionContext): AuthUser | undefined {
  return context.switchToHttp().getRequest<{ user?: AuthUser }>().user;
}

@Injectable()
export class SuperAdminGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    if (!callerOf(context)?.is_super_admin) throw Errors.forbidden();
    return true;
  }
}

/** Tenant admins, and super admins (who pass every tenant-admin check). */
@Injectable()
export class TenantAdminGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const user = callerOf(context);
    if (!user?.is_super_admin && !user?.is_tenant_admin) throw Errors.forbidden();
    return true;
  }
}
