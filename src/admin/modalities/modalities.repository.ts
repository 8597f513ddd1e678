import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, SelectQueryBuilder } from 'typeorm';
import { likePattern } from '../../common/pagination';
import { Modality, Tenant, Unit } from '../../database/entities';
import type { ModalityRow } from './modalities.dto';

export interface ModalityFilter {
  tenantId?: string;
  unitId?: string;
  search?: string;
  offset: number;
  limit: number;
}

@Injectable()
export class ModalitiesRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  private rows(): SelectQueryBuilder<Modality> {
    return this.dataSource
      .getRepository(Modality)
      .createQueryBuilder('m')
      .innerJoin(Tenant, 't', 't.id = m.tenant_id')
      .innerJoin(Unit, 'u', 'u.id = m.unit_id')
      .select([
        'm.id AS id',
        'm.tenant_id AS tenant_id',
        'm.unit_id AS unit_id',
        'm.name AS name',
        'm.aet AS aet',
        'm.ip_address AS ip_address',
        'm.created_at AS created_at',
        'm.updated_at AS updated_at',
        't.name AS tenant_name',
        'u.name AS unit_name',
      ]);
  }

  async page(filter: ModalityFilter): Promise<[ModalityRow[], number]> {
    const qb = this.rows();
    if (filter.tenantId) qb.andWhere('m.tenant_id = :tenantId', { tenantId: filter.tenantId });
    if (filter.unitId) qb.andWhere('m.unit_id = :unitId', { unitId: filter.unitId });
    if (filter.search) {
      qb.andWhere('(m.name ILIKE :pattern OR m.aet ILIKE :pattern)', { pattern: likePattern(filter.search) });
    }
    const [rows, total] = await Promise.all([
      qb
        .clone()
        .orderBy('lower(m.name)', 'ASC')
        .addOrderBy('m.id', 'ASC')
        .offset(filter.offset)
        .limit(filter.limit)
        .getRawMany<ModalityRow>(),
      qb.getCount(),
    ]);
    return [rows, total];
  }

  async findRow(id: string): Promise<ModalityRow | null> {
    return (await this.rows().where('m.id = :id', { id }).getRawOne<ModalityRow>()) ?? null;
  }

  tenantExists(tenantId: string): Promise<boolean> {
    return this.dataSource.getRepository(Tenant).existsBy({ id: tenantId });
  }

  findUnit(unitId: string): Promise<Unit | null> {
    return this.dataSource.getRepository(Unit).findOneBy({ id: unitId });
  }

  async taken(unitId: string, name: string, aet: string): Promise<{ name: boolean; aet: boolean }> {
    const [row]: Array<{ name: boolean; aet: boolean }> = await this.dataSource.query(
      `SELECT EXISTS (SELECT 1 FROM modalities WHERE unit_id = $1 AND lower(name) = lower($2)) AS name,
              EXISTS (SELECT 1 FROM modalities WHERE aet = $3) AS aet`,
      [unitId, name, aet],
    );
    return row;
  }

  /** Null when the aet or the name in the unit is taken (ON CONFLICT settles races without an error). */
  async insert(values: Pick<Modality, 'tenant_id' | 'unit_id' | 'name' | 'aet' | 'ip_address'>): Promise<string | null> {
    const rows: Array<{ id: string }> = await this.dataSource.query(
      `INSERT INTO modalities (tenant_id, unit_id, name, aet, ip_address) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT DO NOTHING RETURNING id`,
      [values.tenant_id, values.unit_id, values.name, values.aet, values.ip_address],
    );
    return rows[0]?.id ?? null;
  }
}
