import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, SelectQueryBuilder } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { DataScope, scopeCondition } from '../../common/auth/data-scope';
import { foldedSearch } from '../../common/pagination';
import { Unit } from '../../database/entities';
import { ReportPreset } from './report-preset.entity';
import type { PresetRow } from './presets.dto';

export interface PresetFilter {
  modality?: string;
  search?: string;
  unitId?: string;
  offset: number;
  limit: number;
}

export type PresetValues = Partial<Omit<PresetRow, 'id' | 'created_at' | 'updated_at'>>;

const PRESET_COLUMNS = [
  'p.id AS id',
  'p.tenant_id AS tenant_id',
  'p.unit_id AS unit_id',
  'p.name AS name',
  'p.modality AS modality',
  'p.indication AS indication',
  'p.technique AS technique',
  'p.findings AS findings',
  'p.impression AS impression',
  'p.created_at AS created_at',
  'p.updated_at AS updated_at',
];

/**
 * Report presets of the scope: a regular user reads its unit's and the whole clinic's (unit_id
 * null); a tenant admin the clinic's; a super admin every clinic's.
 */
@Injectable()
export class PresetsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  private visible(scope: DataScope): SelectQueryBuilder<ReportPreset> {
    const tenant = scopeCondition(scope, { tenant: 'p.tenant_id' });
    const qb = this.db
      .createQueryBuilder(ReportPreset, 'p')
      .select(PRESET_COLUMNS)
      .where('p.deleted_at IS NULL')
      .andWhere(tenant.sql, tenant.params);
    if (scope.kind === 'unit') qb.andWhere('(p.unit_id = :presetUnitId OR p.unit_id IS NULL)', { presetUnitId: scope.unitId });
    return qb;
  }

  async page(scope: DataScope, filter: PresetFilter): Promise<[PresetRow[], number]> {
    const qb = this.visible(scope);
    // That unit's presets and those of the unit's own clinic (a super admin's scope holds every clinic).
    if (filter.unitId) {
      const unitClinic = 'p.tenant_id = (SELECT tenant_id FROM units WHERE id = :unitId)';
      qb.andWhere(`(p.unit_id = :unitId OR p.unit_id IS NULL) AND ${unitClinic}`, { unitId: filter.unitId });
    }
    if (filter.modality)
      qb.andWhere('(upper(p.modality) = upper(:modality) OR p.modality IS NULL)', { modality: filter.modality });
    if (filter.search) {
      const search = foldedSearch(['p.name'], filter.search);
      qb.andWhere(search.sql, search.params);
    }
    const [rows, total] = await Promise.all([
      qb
        .clone()
        .orderBy('lower(p.name)', 'ASC')
        .addOrderBy('p.id', 'ASC')
        .offset(filter.offset)
        .limit(filter.limit)
        .getRawMany<PresetRow>(),
      qb.getCount(),
    ]);
    return [rows, total];
  }

  async findVisible(scope: DataScope, id: string): Promise<PresetRow | null> {
    return (await this.visible(scope).andWhere('p.id = :id', { id }).getRawOne<PresetRow>()) ?? null;
  }

  async tenantOfUnit(unitId: string): Promise<string | null> {
    const row = await this.db
      .createQueryBuilder(Unit, 'u')
      .select('u.tenant_id', 'tenant_id')
      .where('u.id = :unitId', { unitId })
      .getRawOne<{ tenant_id: string }>();
    return row?.tenant_id ?? null;
  }

  /** Whether the unit is one of that tenant's. */
  async unitOfTenant(tenantId: string, unitId: string): Promise<boolean> {
    const row = await this.db
      .createQueryBuilder(Unit, 'u')
      .select('u.id', 'id')
      .where('u.id = :unitId AND u.tenant_id = :tenantId', { unitId, tenantId })
      .getRawOne();
    return row !== undefined;
  }

  async create(values: PresetValues & { tenant_id: string; name: string }): Promise<string> {
    const result = await this.db
      .createQueryBuilder()
      .insert()
      .into(ReportPreset)
      .values(values as QueryDeepPartialEntity<ReportPreset>)
      .returning('id')
      .execute();
    return (result.raw as Array<{ id: string }>)[0].id;
  }

  async update(id: string, changes: PresetValues): Promise<boolean> {
    const result = await this.db
      .createQueryBuilder()
      .update(ReportPreset)
      .set({ ...changes, updated_at: () => 'now()' } as QueryDeepPartialEntity<ReportPreset>)
      .where('id = :id AND deleted_at IS NULL', { id })
      .execute();
    return (result.affected ?? 0) > 0;
  }

  async softDelete(id: string): Promise<boolean> {
    const result = await this.db
      .createQueryBuilder()
      .update(ReportPreset)
      .set({ deleted_at: () => 'now()', updated_at: () => 'now()' })
      .where('id = :id AND deleted_at IS NULL', { id })
      .execute();
    return (result.affected ?? 0) > 0;
  }
}
