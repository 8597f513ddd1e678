import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, SelectQueryBuilder } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { DataScope, scopeCondition } from '../../common/auth/data-scope';
import { foldedSearch } from '../../common/pagination';
import { Unit } from '../../database/entities';
import { ReportTemplate } from './report-template.entity';
import type { TemplateRow } from './templates.dto';

export interface TemplateFilter {
  tenantId?: string;
  unitId?: string;
  search?: string;
  offset: number;
  limit: number;
}

export interface TemplateValues {
  name: string;
  content: string | null;
  schema_version: number;
  layout: Record<string, unknown>;
  page: Record<string, unknown>;
  assets: Record<string, unknown>;
  is_active: boolean;
}

export type TemplateChanges = Partial<TemplateValues & { unit_id: string | null }>;

/**
 * Which templates the scope may read. Templates belong to a tenant; admins (tenant scope) see all
 * of it, a regular user (unit scope) only the active ones of their unit or the tenant's global ones.
 */
export function templateVisibility(scope: DataScope): { sql: string; params: Record<string, string> } {
  const tenant = scopeCondition(scope, { tenant: 'rt.tenant_id' });
  if (scope.kind !== 'unit') return tenant;
  return {
    sql: `${tenant.sql} AND rt.is_active AND (rt.unit_id = :visibleUnitId OR rt.unit_id IS NULL)`,
    params: { ...tenant.params, visibleUnitId: scope.unitId },
  };
}

@Injectable()
export class TemplatesRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** Live (not soft-deleted) templates visible in the scope, with their unit's name. */
  private visible(scope: DataScope): SelectQueryBuilder<ReportTemplate> {
    const visibility = templateVisibility(scope);
    return this.dataSource
      .getRepository(ReportTemplate)
      .createQueryBuilder('rt')
      .withDeleted()
      .leftJoin(Unit, 'u', 'u.id = rt.unit_id')
      .select([
        'rt.id AS id',
        'rt.tenant_id AS tenant_id',
        'rt.unit_id AS unit_id',
        'rt.name AS name',
        'rt.content AS content',
        'rt.schema_version AS schema_version',
        'rt.layout AS layout',
        'rt.page AS page',
        'rt.assets AS assets',
        'rt.is_active AS is_active',
        'u.name AS unit_name',
        'rt.created_at AS created_at',
        'rt.updated_at AS updated_at',
      ])
      .where('rt.deleted_at IS NULL')
      .andWhere(visibility.sql, visibility.params);
  }

  async page(scope: DataScope, filter: TemplateFilter): Promise<[TemplateRow[], number]> {
    const qb = this.visible(scope);
    if (filter.tenantId) qb.andWhere('rt.tenant_id = :tenantId', { tenantId: filter.tenantId });
    if (filter.unitId) qb.andWhere('rt.unit_id = :unitId', { unitId: filter.unitId });
    if (filter.search) {
      const search = foldedSearch(['rt.name'], filter.search);
      qb.andWhere(search.sql, search.params);
    }
    const [rows, total] = await Promise.all([
      qb
        .clone()
        .orderBy('lower(rt.name)', 'ASC')
        .addOrderBy('rt.id', 'ASC')
        .offset(filter.offset)
        .limit(filter.limit)
        .getRawMany<TemplateRow>(),
      qb.getCount(),
    ]);
    return [rows, total];
  }

  async findVisible(scope: DataScope, id: string): Promise<TemplateRow | null> {
    return (await this.visible(scope).andWhere('rt.id = :id', { id }).getRawOne<TemplateRow>()) ?? null;
  }

  async findActiveOfUnit(scope: DataScope, unitId: string): Promise<TemplateRow | null> {
    const row = await this.visible(scope)
      .andWhere('rt.unit_id = :unitId AND rt.is_active', { unitId })
      .getRawOne<TemplateRow>();
    return row ?? null;
  }

  /** A unit the scope's templates may use (its tenant is the tenant of the scope). */
  async findUnitInScope(scope: DataScope, unitId: string): Promise<{ id: string; tenant_id: string } | null> {
    const visible = scopeCondition(scope, { tenant: 'u.tenant_id' });
    const unit = await this.dataSource
      .getRepository(Unit)
      .createQueryBuilder('u')
      .select(['u.id', 'u.tenant_id'])
      .where('u.id = :unitId', { unitId })
      .andWhere(visible.sql, visible.params)
      .getOne();
    return unit ? { id: unit.id, tenant_id: unit.tenant_id } : null;
  }

  /**
   * Template writes of one tenant run one at a time: each takes the tenant row's lock first (and
   * only then any template row), so two activations cannot both leave their template active and
   * writers never wait on each other in a cycle. FOR NO KEY UPDATE does not block the foreign-key
   * checks of inserts elsewhere that reference the tenant.
   */
  private async lockTenant(manager: EntityManager, tenantId: string): Promise<void> {
    await manager.query(`SELECT id FROM tenants WHERE id = $1 FOR NO KEY UPDATE`, [tenantId]);
  }

  private async deactivateOthers(
    manager: EntityManager,
    tenantId: string,
    unitId: string | null,
    exceptId: string | null,
  ): Promise<void> {
    await manager.query(
      `UPDATE report_templates SET is_active = false, updated_at = now()
        WHERE tenant_id = $1 AND unit_id IS NOT DISTINCT FROM $2::uuid AND is_active AND deleted_at IS NULL
          AND ($3::uuid IS NULL OR id <> $3::uuid)`,
      [tenantId, unitId, exceptId],
    );
  }

  create(tenantId: string, unitId: string, values: TemplateValues): Promise<string> {
    return this.dataSource.transaction(async (manager) => {
      await this.lockTenant(manager, tenantId);
      if (values.is_active) await this.deactivateOthers(manager, tenantId, unitId, null);
      const { identifiers } = await manager
        .getRepository(ReportTemplate)
        .insert({ ...values, tenant_id: tenantId, unit_id: unitId } as QueryDeepPartialEntity<ReportTemplate>);
      return identifiers[0].id as string;
    });
  }

  /** False when the template is gone (deleted meanwhile). */
  update(id: string, tenantId: string, changes: TemplateChanges): Promise<boolean> {
    return this.dataSource.transaction(async (manager) => {
      await this.lockTenant(manager, tenantId);
      const [current]: Array<{ unit_id: string | null; is_active: boolean }> = await manager.query(
        `SELECT unit_id, is_active FROM report_templates WHERE id = $1 AND deleted_at IS NULL FOR UPDATE`,
        [id],
      );
      if (!current) return false;
      const unitId = changes.unit_id !== undefined ? changes.unit_id : current.unit_id;
      const isActive = changes.is_active ?? current.is_active;
      if (isActive) await this.deactivateOthers(manager, tenantId, unitId, id);
      await manager
        .getRepository(ReportTemplate)
        .createQueryBuilder()
        .update()
        .set({ ...changes, updated_at: () => 'now()' } as QueryDeepPartialEntity<ReportTemplate>)
        .where('id = :id', { id })
        .execute();
      return true;
    });
  }

  async softDelete(id: string): Promise<boolean> {
    const [, affected]: [unknown, number] = await this.dataSource.query(
      `UPDATE report_templates SET deleted_at = now(), updated_at = now() WHERE id = $1 AND deleted_at IS NULL`,
      [id],
    );
    return affected > 0;
  }
}
