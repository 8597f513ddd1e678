import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, SelectQueryBuilder } from 'typeorm';
import { DataScope, scopeCondition } from '../common/auth/data-scope';
import { Patient } from '../database/entities';
import {
  LIST_SEARCH_COLUMNS,
  ListSearch,
  ListSpec,
  listCountSql,
  listPageSql,
  listScopeSql,
  listSearchCountSql,
  ListTotals,
  PreparedQueries,
  SqlParams,
} from '../database/list';

const unitPatients = (studiesInUnit: string) =>
  `EXISTS (SELECT 1 FROM studies s WHERE s.patient_uuid = p.id AND ${studiesInUnit})`;

/** The id and the columns of the patients list's order. */
const PATIENT_ORDER_COLUMNS = 'p.id, p.patient_name, p.created_at';

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
  orderColumns: PATIENT_ORDER_COLUMNS,
  scope: { tenant: 'p.tenant_id' },
  unitScope: unitPatients,
  searchText: 'p.search_text',
  pieceCounts: { table: 'patient_piece_counts', tenantTable: 'patient_tenant_piece_counts', count: 'patients', perUnit: false },
  // All in the name order indexes (PatientWalkIndexes migration).
  walkColumns: `${PATIENT_ORDER_COLUMNS}, p.search_text`,
};

type ListRow = Patient & { _total?: string | null };

/** The patient without the columns a list statement adds (its total, a search's sizes). */
function toPatientRow(row: ListRow): Patient {
  const patient: Record<string, unknown> = { ...row };
  for (const column of LIST_SEARCH_COLUMNS) delete patient[column];
  return patient as unknown as Patient;
}

/**
 * Patients as the caller may see them: a patient belongs to a tenant only, so a unit-scoped caller
 * sees a patient only when one of its studies is in that unit (an EXISTS on studies_patient_order_idx).
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

  /** The list conditions without a search, as SQL with positional parameters (`onRows`: see listScopeSql). */
  private conditions(scope: DataScope, p: SqlParams, onRows = false): string {
    return listScopeSql(PATIENTS_LIST, scope, p, onRows);
  }

  /**
   * One page in name order and the exact total, without counting a tenant's patients per page:
   * unfiltered, the tenant's counter (patient_counts) in the page's own statement; a unit's
   * patients (no counter holds those), counted once per scope version and kept (ListTotals) and
   * walked in the tenant's name order; a search, by ListSearch, whose walks go through the tenant's
   * name order too (a unit's patient is a tenant's patient with a study in the unit).
   */
  async listPatients(
    scope: DataScope,
    search: string | undefined,
    offset: number,
    limit: number,
  ): Promise<{ rows: Patient[]; total: number }> {
    if (search) {
      const { rows, total } = await this.searches.page<ListRow>(
        {
          spec: PATIENTS_LIST,
          key: JSON.stringify(['patients', scope, search]),
          search,
          scope,
          counters: (p) => this.totals.patients(scope, p),
          walkedBy: 'tenant',
          conditions: (p, onRows) => this.conditions(scope, p, onRows),
          count: (counted, p) => listSearchCountSql(PATIENTS_LIST, scope, search, counted, p),
        },
        offset,
        limit,
      );
      return { rows: rows.map(toPatientRow), total };
    }
    if (scope.kind !== 'unit') {
      const p = new SqlParams();
      const where = this.conditions(scope, p);
      const total = this.totals.patients(scope, p).total as string;
      const rows: ListRow[] = await this.prepared.query(
        listPageSql(PATIENTS_LIST, where, `${total} AS _total`, p, offset, limit),
        p.values,
      );
      if (rows.length > 0) return { rows: rows.map(toPatientRow), total: Number(rows[0]._total) };
      const q = new SqlParams();
      const [row] = await this.prepared.query<{ _total: string }>(
        `SELECT ${this.totals.patients(scope, q).total} AS _total`,
        q.values,
      );
      return { rows: [], total: Number(row._total) };
    }

    const p = new SqlParams();
    const [meta]: Array<{ version: string }> = await this.prepared.query(
      `SELECT ${this.totals.patients(scope, p).version} AS version`,
      p.values,
    );
    const key = JSON.stringify(['patients', scope, null]);
    const total = await this.totals.cached(key, meta.version, async () => {
      const q = new SqlParams();
      const [row] = await this.prepared.query<{ total: string; version: string }>(
        `SELECT ${listCountSql(PATIENTS_LIST, this.conditions(scope, q))} AS total, ${this.totals.patients(scope, q).version} AS version`,
        q.values,
      );
      return { total: Number(row.total), version: row.version };
    });
    if (total <= offset) return { rows: [], total };
    const q = new SqlParams();
    const rows: ListRow[] = await this.prepared.query(
      listPageSql(PATIENTS_LIST, this.conditions(scope, q), 'NULL AS _total', q, offset, limit),
      q.values,
    );
    return { rows: rows.map(toPatientRow), total };
  }

  findPatient(scope: DataScope, id: string): Promise<Patient | null> {
    return this.visible(scope).andWhere('p.id = :id', { id }).getOne();
  }
}
