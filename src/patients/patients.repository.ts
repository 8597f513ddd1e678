import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Brackets, DataSource, SelectQueryBuilder } from 'typeorm';
import { DataScope, scopeCondition } from '../common/auth/data-scope';
import { likePattern } from '../common/pagination';
import { Patient } from '../database/entities';

/**
 * Patients as the caller may see them: a patient belongs to a tenant only, so a unit-scoped caller
 * sees a patient only when one of its studies is in that unit (an EXISTS on studies_patient_order_idx).
 */
@Injectable()
export class PatientsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  private visible(scope: DataScope): SelectQueryBuilder<Patient> {
    const tenant = scopeCondition(scope, { tenant: 'p.tenant_id' });
    const qb = this.db.createQueryBuilder(Patient, 'p').where(tenant.sql, tenant.params);
    if (scope.kind === 'unit') {
      const studies = scopeCondition(scope, { tenant: 's.tenant_id', unit: 's.unit_id' });
      qb.andWhere(`EXISTS (SELECT 1 FROM studies s WHERE s.patient_uuid = p.id AND ${studies.sql})`, studies.params);
    }
    return qb;
  }

  private filtered(scope: DataScope, search?: string): SelectQueryBuilder<Patient> {
    const qb = this.visible(scope);
    if (search) {
      const pattern = likePattern(search);
      qb.andWhere(
        new Brackets((or) =>
          or.where('p.patient_name ILIKE :pattern', { pattern }).orWhere('p.patient_id ILIKE :pattern'),
        ),
      );
    }
    return qb;
  }

  async listPatients(
    scope: DataScope,
    search: string | undefined,
    offset: number,
    limit: number,
  ): Promise<{ rows: Patient[]; total: number }> {
    const page = this.filtered(scope, search)
      .orderBy('p.patient_name', 'ASC')
      .addOrderBy('p.created_at', 'DESC')
      .addOrderBy('p.id', 'ASC')
      .offset(offset)
      .limit(limit);
    const count = this.filtered(scope, search).select('COUNT(*)::int', 'total');
    const [rows, counted] = await Promise.all([page.getMany(), count.getRawOne<{ total: number }>()]);
    return { rows, total: counted?.total ?? 0 };
  }

  findPatient(scope: DataScope, id: string): Promise<Patient | null> {
    return this.visible(scope).andWhere('p.id = :id', { id }).getOne();
  }
}
