import { applyDecorators, createParamDecorator, ExecutionContext, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiCookieAuth, ApiForbiddenResponse, ApiUnauthorizedResponse } from '@nestjs/swagger';
import type { AuthUser } from './auth-user';
import { DataScope, scopeOf } from './data-scope';
import { JwtAuthGuard, SuperAdminGuard, TenantAdminGuard } from './guards';

export type Role = 'user' | 'tenant_admin' | 'super_admin';

/**
 * Marks a route as authenticated (and optionally role-restricted), and declares it in Swagger.
 * `@Auth()` any signed-in user; `@Auth('tenant_admin')`; `@Auth('super_admin')`.
 */
export function Auth(role: Role = 'user') {
  const guards: Function[] = [JwtAuthGuard];
  if (role === 'tenant_admin') guards.push(TenantAdminGuard);
  if (role === 'super_admin') guards.push(SuperAdminGuard);
  const decorators = [
    UseGuards(...(guards as never[])),
    ApiBearerAuth(),
    ApiCookieAuth('pacs_access_token'),
    ApiUnauthorizedResponse({ description: 'Missing, invalid, expired or blacklisted token: `{message: "Unauthenticated."}`' }),
  ];
  if (role !== 'user') {
    decorators.push(ApiForbiddenResponse({ description: `Caller is not ${role}: \`{error: "Forbidden"}\`` }));
  }
  return applyDecorators(...decorators);
}

export const CurrentUser = createParamDecorator(
  (_: unknown, context: ExecutionContext): AuthUser => context.switchToHttp().getRequest<{ user: AuthUser }>().user,
);

/** The caller's data scope (see scopeOf). */
export const CallerScope = createParamDecorator((_: unknown, context: ExecutionContext): DataScope =>
  scopeOf(context.switchToHttp().getRequest<{ user: AuthUser }>().user),
);
