import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, SelectQueryBuilder } from 'typeorm';
import { DataScope, scopeCondition } from '../common/auth/data-scope';
import { Patient } from '../database/entities';
import {
  ListSearch,
  ListSearchQuery,
  ListSpec,
  listCountSql,
  listPageSql,
  listScopeSql,
  ListTotals,
  PreparedQueries,
  scopeTenantsSql,
  SqlParams,
} from '../database/list';

const unitPatients = (studiesInUnit: string) =>
  `EXISTS (SELECT 1 FROM studies s WHERE s.patient_uuid = p.id AND ${studiesInUnit})`;

/**
 * The patients list. A patient belongs to a tenant only: a unit-scoped caller sees it only when one
 * of its studies is in that unit (an EXISTS on studies_unit_patient_idx).
 */
export const PATIENTS_LIST: ListSpec = {
  from: 'patients p',
  id: 'p.id',
  columns: [
    'p.id',
    'p.tenant_id',
    'p.patient_id',
    'p.patient_name',
    'p.patient_birth_date::text AS patient_birth_date',
    'p.patient_sex',
    'p.created_at',
    'p.updated_at',
  ].join(', '),
  order: 'p.patient_name ASC, p.created_at DESC, p.id ASC',
  // The same order through an expression (name || '' is the name) that no index provides.
  unindexedOrder: "(p.patient_name || '') ASC, p.created_at DESC, p.id ASC",
  scope: { tenant: 'p.tenant_id' },
  unitScope: unitPatients,
  searchText: 'p.search_text',
  // All in the name order indexes (InitialSchema migration).
  walkColumns: 'p.id, p.patient_name, p.created_at, p.search_text',
  walkFrom: { field: 'patient_name', condition: (name) => `p.patient_name >= ${name}` },
};

/** A search of the patients list, as ListSearch reads it. */
export function patientSearch(totals: ListTotals, scope: DataScope, search: string): ListSearchQuery {
  return {
    spec: PATIENTS_LIST,
    key: JSON.stringify(['patients', scope, search]),
    search,
    counters: (p) => totals.patients(scope, p),
    conditions: (p, throughTerms) => listScopeSql(PATIENTS_LIST, scope, p, throughTerms),
    tenants: (p) => scopeTenantsSql(scope, p),
    scopeKey: JSON.stringify(['patients', scope]),
  };
}

type ListRow = Patient & { _total?: string | null; _version?: string };

/** The patient without the columns a list statement adds (its total, a search's scope version). */
function toPatientRow(row: ListRow): Patient {
  const { _total, _version, ...patient } = row;
  return patient as Patient;
}

/**
 * Patients as the caller may see them: a patient belongs to a tenant only, so a unit-scoped caller
 * sees a patient only when one of its studies is in that unit (an EXISTS on studies_unit_patient_idx).
 */
@Injectable()
export class PatientsRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly totals: ListTotals,
    private readonly prepared: PreparedQueries,
    private readonly searches: ListSearch,
  ) {}

  private visible(scope: DataScope): SelectQueryBuilder<Patient> {
    const tenant = scopeCondition(scope, { tenant: 'p.tenant_id' });
    const qb = this.db.createQueryBuilder(Patient, 'p').where(tenant.sql, tenant.params);
    if (scope.kind === 'unit') {
      const studies = scopeCondition(scope, { tenant: 's.tenant_id', unit: 's.unit_id' });
      qb.andWhere(unitPatients(studies.sql), studies.params);
    }
    return qb;
  }

  /**
   * One page in name order and its total: unfiltered, the tenant's counter (patient_counts) in the
   * page's own statement; a unit's patients (no counter holds those), counted once per scope
   * version and kept (ListTotals); a search, by ListSearch (exact up to SEARCH_TOTAL_CAP).
   */
  async listPatients(
    scope: DataScope,
    search: string | undefined,
    offset: number,
    limit: number,
  ): Promise<{ rows: Patient[]; total: number; exact: boolean }> {
    if (search) {
      const page = await this.searches.page<ListRow>(patientSearch(this.totals, scope, search), offset, limit);
      return { ...page, rows: page.rows.map(toPatientRow) };
    }
    if (scope.kind !== 'unit') {
      const p = new SqlParams();
      const where = listScopeSql(PATIENTS_LIST, scope, p);
      const total = this.totals.patients(scope, p).total as string;
      const rows: ListRow[] = await this.prepared.query(
        listPageSql(PATIENTS_LIST, where, `, ${total} AS _total`, p, offset, limit),
        p.values,
      );
      if (rows.length > 0) return { rows: rows.map(toPatientRow), total: Number(rows[0]._total), exact: true };
      const q = new SqlParams();
      const [row] = await this.prepared.query<{ _total: string }>(
        `SELECT ${this.totals.patients(scope, q).total} AS _total`,
        q.values,
      );
      return { rows: [], total: Number(row._total), exact: true };
    }

    const total = await this.searches.exactTotal({
      spec: PATIENTS_LIST,
      key: JSON.stringify(['patients', scope, null]),
      counters: (p) => this.totals.patients(scope, p),
      conditions: (p) => listScopeSql(PATIENTS_LIST, scope, p),
    });
    if (total <= offset) return { rows: [], total, exact: true };
    const q = new SqlParams();
    const rows: ListRow[] = await this.prepared.query(
      listPageSql(PATIENTS_LIST, listScopeSql(PATIENTS_LIST, scope, q), '', q, offset, limit),
      q.values,
    );
    return { rows: rows.map(toPatientRow), total, exact: true };
  }

  findPatient(scope: DataScope, id: string): Promise<Patient | null> {
    return this.visible(scope).andWhere('p.id = :id', { id }).getOne();
  }
}
