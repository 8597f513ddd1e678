import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Brackets, DataSource, SelectQueryBuilder } from 'typeorm';
import { DataScope, scopeCondition } from '../common/auth/data-scope';
import { likePattern } from '../common/pagination';
import { Patient } from '../database/entities';
import { ListTotals } from '../studies/list-totals';

/**
 * Patients as the caller may see them: a patient belongs to a tenant only, so a unit-scoped caller
 * sees a patient only when one of its studies is in that unit (an EXISTS on studies_patient_order_idx).
 */
@Injectable()
export class PatientsRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly totals: ListTotals,
  ) {}

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
    const [rows, total] = await Promise.all([page.getMany(), this.total(scope, search)]);
    return { rows, total };
  }

  /**
   * Exact totals without counting a tenant's patients per page: unfiltered, the tenant's counter
   * (patient_counts); a search, or a unit's patients (no counter holds those), counted once per
   * scope version and kept (ListTotals).
   */
  private async total(scope: DataScope, search: string | undefined): Promise<number> {
    const counters = await this.totals.patients(scope);
    if (!search && counters.total !== null) return counters.total;
    const key = JSON.stringify(['patients', scope, search ?? null]);
    return this.totals.cached(key, counters.version, this.filtered(scope, search), this.totals.patientVersion(scope));
  }

  findPatient(scope: DataScope, id: string): Promise<Patient | null> {
    return this.visible(scope).andWhere('p.id = :id', { id }).getOne();
  }
}
