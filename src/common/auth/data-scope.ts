import type { AuthUser } from './auth-user';

/**
 * What the caller may see. Every query on tenant data goes through one of these, built in one
 * place (scopeOf), so no controller or service writes its own tenant filter.
 */
export type DataScope =
  | { kind: 'all' }
  | { kind: 'tenant'; tenantId: string }
  | { kind: 'unit'; tenantId: string; unitId: string }
  | { kind: 'none' };

export function scopeOf(user: Pick<AuthUser, 'is_super_admin' | 'is_tenant_admin' | 'tenant_id' | 'unit_id'>): DataScope {
  if (user.is_super_admin) return { kind: 'all' };
  if (!user.tenant_id) return { kind: 'none' };
  if (user.is_tenant_admin) return { kind: 'tenant', tenantId: user.tenant_id };
  if (!user.unit_id) return { kind: 'none' };
  return { kind: 'unit', tenantId: user.tenant_id, unitId: user.unit_id };
}

export interface ScopeColumns {
  /** e.g. `s.tenant_id` */
  tenant: string;
  /** e.g. `s.unit_id`; omit for records that belong to a tenant only. */
  unit?: string;
}

/**
 * The scope as a SQL condition with named parameters, for TypeORM query builders:
 * `qb.andWhere(cond.sql, cond.params)`. A unit scope on a tenant-only record limits to the tenant.
 */
export function scopeCondition(scope: DataScope, columns: ScopeColumns): { sql: string; params: Record<string, string> } {
  switch (scope.kind) {
    case 'all':
      return { sql: 'TRUE', params: {} };
    case 'none':
      return { sql: 'FALSE', params: {} };
    case 'tenant':
      return { sql: `${columns.tenant} = :scopeTenantId`, params: { scopeTenantId: scope.tenantId } };
    case 'unit':
      return columns.unit
        ? {
            sql: `${columns.tenant} = :scopeTenantId AND ${columns.unit} = :scopeUnitId`,
            params: { scopeTenantId: scope.tenantId, scopeUnitId: scope.unitId },
          }
        : { sql: `${columns.tenant} = :scopeTenantId`, params: { scopeTenantId: scope.tenantId } };
  }
}

/** The tenant the caller belongs to, or null for a super admin (who may name any). */
export function scopeTenantId(scope: DataScope): string | null {
  return scope.kind === 'tenant' || scope.kind === 'unit' ? scope.tenantId : null;
}

/** Where a record lives: its tenant and, for records kept per unit, its unit. */
export interface RecordPlace {
  tenant_id: string;
  unit_id: string | null;
}

/** Whether the scope sees a record placed there (the same rule as `scopeCondition`, in memory). */
export function scopeIncludes(scope: DataScope, place: RecordPlace): boolean {
  switch (scope.kind) {
    case 'all':
      return true;
    case 'none':
      return false;
    case 'tenant':
      return place.tenant_id === scope.tenantId;
    case 'unit':
      return place.tenant_id === scope.tenantId && place.unit_id === scope.unitId;
  }
}
