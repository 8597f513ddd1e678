import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, SelectQueryBuilder } from 'typeorm';
import { Modality, Tenant, Unit } from '../../database/entities';
import { rawPage, TenantUnitPageFilter } from '../../database/raw-page';
import type { ModalityRow } from './modalities.dto';

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

  page(filter: TenantUnitPageFilter): Promise<[ModalityRow[], number]> {
    return rawPage(this.rows(), 'm', ['name', 'aet'], filter);
  }

  async findRow(id: string): Promise<ModalityRow | null> {
    return (await this.rows().where('m.id = :id', { id }).getRawOne<ModalityRow>()) ?? null;
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
