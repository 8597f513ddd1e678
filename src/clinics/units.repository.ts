import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { DataScope, scopeCondition } from '../common/auth/data-scope';
import { foldedSearch } from '../common/pagination';
import { Unit } from '../database/entities';

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
      const search = foldedSearch(['u.name', 'u.slug'], filter.search);
      qb.andWhere(search.sql, search.params);
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
   * 'conflict' when the name (in the tenant) or the slug is taken: ON CONFLICT waits for a
   * concurrent insert of the same key and skips, so races end without a failed query.
   */
  insert(values: { tenant_id: string; name: string; slug: string | null }): Promise<Unit | 'conflict' | 'no_tenant'> {
    return this.dataSource.transaction(async (manager) => {
      const [tenant]: Array<{ is_active: boolean }> = await manager.query(
        `SELECT is_active FROM tenants WHERE id = $1 FOR SHARE`,
        [values.tenant_id],
      );
      if (!tenant) return 'no_tenant';
      const rows: Array<{ id: string }> = await manager.query(
        `INSERT INTO units (tenant_id, name, slug, is_active) VALUES ($1, $2, $3, $4)
         ON CONFLICT DO NOTHING RETURNING id`,
        [values.tenant_id, values.name, values.slug, tenant.is_active],
      );
      return rows[0] ? manager.getRepository(Unit).findOneByOrFail({ id: rows[0].id }) : 'conflict';
    });
  }
}
