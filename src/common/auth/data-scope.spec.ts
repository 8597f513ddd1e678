import { scopeCondition, scopeOf, scopeTenantId } from './data-scope';

const base = { is_super_admin: false, is_tenant_admin: false, tenant_id: 't1', unit_id: 'u1' };

describe('scopeOf', () => {
  it('gives a super admin everything', () => {
    expect(scopeOf({ ...base, is_super_admin: true, tenant_id: null, unit_id: null })).toEqual({ kind: 'all' });
  });
  it('gives a tenant admin the tenant', () => {
    expect(scopeOf({ ...base, is_tenant_admin: true })).toEqual({ kind: 'tenant', tenantId: 't1' });
  });
  it('gives a regular user the unit', () => {
    expect(scopeOf(base)).toEqual({ kind: 'unit', tenantId: 't1', unitId: 'u1' });
  });
  it('gives a regular user without a unit nothing', () => {
    expect(scopeOf({ ...base, unit_id: null })).toEqual({ kind: 'none' });
  });
  it('gives a user without a tenant nothing, even as tenant admin', () => {
    expect(scopeOf({ ...base, is_tenant_admin: true, tenant_id: null })).toEqual({ kind: 'none' });
  });
});

describe('scopeCondition', () => {
  const columns = { tenant: 's.tenant_id', unit: 's.unit_id' };
  it('filters a unit scope on tenant and unit', () => {
    expect(scopeCondition({ kind: 'unit', tenantId: 't', unitId: 'u' }, columns)).toEqual({
      sql: 's.tenant_id = :scopeTenantId AND s.unit_id = :scopeUnitId',
      params: { scopeTenantId: 't', scopeUnitId: 'u' },
    });
  });
  it('limits a unit scope to the tenant on tenant-only records', () => {
    expect(scopeCondition({ kind: 'unit', tenantId: 't', unitId: 'u' }, { tenant: 'p.tenant_id' }).sql).toBe(
      'p.tenant_id = :scopeTenantId',
    );
  });
  it('matches nothing for no scope and everything for all', () => {
    expect(scopeCondition({ kind: 'none' }, columns).sql).toBe('FALSE');
    expect(scopeCondition({ kind: 'all' }, columns).sql).toBe('TRUE');
  });
});

describe('scopeTenantId', () => {
  it("names the tenant of a tenant admin and a unit user (whose searches read that tenant's index terms), none for the super admin", () => {
    expect(scopeTenantId({ kind: 'tenant', tenantId: 'a' })).toBe('a');
    expect(scopeTenantId({ kind: 'unit', tenantId: 'a', unitId: 'u' })).toBe('a');
    expect(scopeTenantId({ kind: 'all' })).toBeNull();
    expect(scopeTenantId({ kind: 'none' })).toBeNull();
  });
});
