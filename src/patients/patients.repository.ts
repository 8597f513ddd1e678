import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, SelectQueryBuilder } from 'typeorm';
import { DataScope, scopeCondition } from '../common/auth/data-scope';
import { Patient } from '../database/entities';
import {
  ListSpec,
  listCountSql,
  listPageSql,
  listScopeSql,
  listSearchCountSql,
  listSearchSql,
  ListTotals,
  PreparedQueries,
  searchCountPlan,
  searchIndexedSql,
  SearchPlan,
  searchPlan,
  scopeOnRows,
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
  pieceCounts: { table: 'patient_piece_counts', count: 'patients', perUnit: false },
};

type ListRow = Patient & { _total: string | null };

function toPatientRow(row: ListRow): Patient {
  const { _total: _ignored, ...patient } = row;
  return patient as Patient;
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

  /** The list conditions as SQL with positional parameters (search plans: see listSearchSql). */
  private conditions(
    scope: DataScope,
    search: string | undefined,
    p: SqlParams,
    plan: SearchPlan = 'index',
    scopeOnRows = false,
  ): string {
    const parts = [listScopeSql(PATIENTS_LIST, scope, p, scopeOnRows)];
    if (search) parts.push(listSearchSql(PATIENTS_LIST, search, p, plan));
    return parts.join(' AND ');
  }

  /**
   * One page in list order and the exact total, without counting a tenant's patients per page:
   * unfiltered, the tenant's counter (patient_counts) in the page's own statement; a search, or a
   * unit's patients (no counter holds those), counted once per scope version and kept (ListTotals),
   * the count then choosing the page's plan (searchPlan).
   */
  async listPatients(
    scope: DataScope,
    search: string | undefined,
    offset: number,
    limit: number,
  ): Promise<{ rows: Patient[]; total: number }> {
    if (!search && scope.kind !== 'unit') {
      const p = new SqlParams();
      const where = this.conditions(scope, search, p);
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
    const counters = this.totals.patients(scope, p);
    // A unit user's list walks the tenant's patients in order too: the tenant's number sizes both plans.
    // Without a search there is no search index scan, so no archive size to weigh it (scopeOnRows).
    const indexed = search ? searchIndexedSql(search, p) : 'false';
    const archive = search ? counters.archive : 'NULL';
    const [meta]: Array<{ version: string; tenant: string; archive: string | null; indexed: boolean }> =
      await this.prepared.query(
        `SELECT ${counters.version} AS version, ${counters.tenant} AS tenant, ${archive} AS archive, ${indexed} AS indexed`,
        p.values,
      );
    const key = JSON.stringify(['patients', scope, search ?? null]);
    const total = await this.totals.cached(key, meta.version, async () => {
      const q = new SqlParams();
      const where = this.conditions(scope, search, q, searchCountPlan(Number(meta.tenant), meta.indexed));
      const count = search ? listSearchCountSql(PATIENTS_LIST, scope, search, where, q) : listCountSql(PATIENTS_LIST, where);
      const [row] = await this.prepared.query<{ total: string; version: string }>(
        `SELECT ${count} AS total, ${this.totals.patients(scope, q).version} AS version`,
        q.values,
      );
      return { total: Number(row.total), version: row.version };
    });
    if (total <= offset) return { rows: [], total };
    const plan = search ? searchPlan(total, Number(meta.tenant), offset, limit, meta.indexed) : 'walk';
    const q = new SqlParams();
    const onRows = plan === 'index' && scopeOnRows(total, Number(meta.tenant), Number(meta.archive));
    const where = this.conditions(scope, search, q, plan, onRows);
    const rows: ListRow[] = await this.prepared.query(
      listPageSql(PATIENTS_LIST, where, 'NULL AS _total', q, offset, limit, plan === 'index'),
      q.values,
    );
    return { rows: rows.map(toPatientRow), total };
  }

  findPatient(scope: DataScope, id: string): Promise<Patient | null> {
    return this.visible(scope).andWhere('p.id = :id', { id }).getOne();
  }
}
