import type { ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { foldedSearch } from '../common/pagination';

/** The filters of the admin lists that name a tenant and a unit. */
export interface TenantUnitPageFilter {
  tenantId?: string;
  unitId?: string;
  search?: string;
  offset: number;
  limit: number;
}

/**
 * One page of raw rows from `rows` (alias `alias`): the optional tenant and unit filters, `search`
 * over `searchColumns` (regardless of case and accents, the user's wildcards literal), ordered by
 * name then id; and the total over the same filters.
 */
export async function rawPage<Row, Entity extends ObjectLiteral>(
  rows: SelectQueryBuilder<Entity>,
  alias: string,
  searchColumns: [string, string],
  filter: TenantUnitPageFilter,
): Promise<[Row[], number]> {
  if (filter.tenantId) rows.andWhere(`${alias}.tenant_id = :tenantId`, { tenantId: filter.tenantId });
  if (filter.unitId) rows.andWhere(`${alias}.unit_id = :unitId`, { unitId: filter.unitId });
  if (filter.search) {
    const search = foldedSearch(
      searchColumns.map((column) => `${alias}.${column}`),
      filter.search,
    );
    rows.andWhere(search.sql, search.params);
  }
  return Promise.all([
    rows
      .clone()
      .orderBy(`lower(${alias}.name)`, 'ASC')
      .addOrderBy(`${alias}.id`, 'ASC')
      .offset(filter.offset)
      .limit(filter.limit)
      .getRawMany<Row>(),
    rows.getCount(),
  ]);
}
