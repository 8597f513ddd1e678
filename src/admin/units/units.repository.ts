import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { DataScope, scopeCondition } from '../../common/auth/data-scope';
import { likePattern } from '../../common/pagination';
import { Tenant, Unit } from '../../database/entities';

export const UNIT_NAME_INDEX = 'units_tenant_name_lower_key';
export const UNIT_SLUG_INDEX = 'units_slug_key';

export interface UnitFilter {
  tenantId?: string;
  search?: string;
  offset: number;
  limit: number;
}

@Injectable()
export class UnitsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** Units visible in `scope` (units belong to a tenant: a unit scope sees its whole tenant). */
  async page(scope: DataScope, filter: UnitFilter): Promise<[Unit[], number]> {
    const qb = this.dataSource.getRepository(Unit).createQueryBuilder('u');
    const visible = scopeCondition(scope, { tenant: 'u.tenant_id' });
    qb.where(visible.sql, visible.params);
    if (filter.tenantId) qb.andWhere('u.tenant_id = :tenantId', { tenantId: filter.tenantId });
    if (filter.search) {
      qb.andWhere('(u.name ILIKE :pattern OR u.slug ILIKE :pattern)', { pattern: likePattern(filter.search) });
    }
    return qb
      .orderBy('lower(u.name)', 'ASC')
      .addOrderBy('u.id', 'ASC')
      .offset(filter.offset)
      .limit(filter.limit)
      .getManyAndCount();
  }

  findById(id: string): Promise<Unit | null> {
    return this.dataSource.getRepository(Unit).findOneBy({ id });
  }

  async tenantExists(tenantId: string): Promise<boolean> {
    return this.dataSource.getRepository(Tenant).existsBy({ id: tenantId });
  }

  async taken(tenantId: string, name: string, slug: string | null): Promise<{ name: boolean; slug: boolean }> {
    const [row]: Array<{ name: boolean; slug: boolean }> = await this.dataSource.query(
      `SELECT EXISTS (SELECT 1 FROM units WHERE tenant_id = $1 AND lower(name) = lower($2)) AS name,
              ($3::varchar IS NOT NULL AND EXISTS (SELECT 1 FROM units WHERE slug = $3)) AS slug`,
      [tenantId, name, slug],
    );
    return row;
  }

  /**
   * Creates the unit with the tenant's current state (units follow their tenant). The tenant row
   * is share-locked so a concurrent status change either sees this unit or is seen by it.
   * Null when the tenant does not exist; the driver's unique violation when name or slug is taken.
   */
  insert(values: { tenant_id: string; name: string; slug: string | null }): Promise<Unit | null> {
    return this.dataSource.transaction(async (manager) => {
      const tenant = await manager
        .getRepository(Tenant)
        .createQueryBuilder('t')
        .select(['t.id', 't.is_active'])
        .where('t.id = :id', { id: values.tenant_id })
        .setLock('pessimistic_read')
        .getOne();
      if (!tenant) return null;
      const repository = manager.getRepository(Unit);
      const { identifiers } = await repository.insert({ ...values, is_active: tenant.is_active });
      return repository.findOneByOrFail({ id: identifiers[0].id as string });
    });
  }
}
