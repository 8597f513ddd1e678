import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, SelectQueryBuilder } from 'typeorm';
import { DataScope, RecordPlace, scopeCondition } from '../common/auth/data-scope';

/** Where a study row lives, and whose it is: what the viewer gate decides on. */
export interface StudyPlace extends RecordPlace {
  study_id: string;
  /** The DICOM Patient ID (one patient per tenant and Patient ID). */
  patient_id: string;
}
import { Instance, Series, Study, Tenant, Unit } from '../database/entities';
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
import type { ReportStatus } from '../database/entities';

export interface StudyFilter {
  search?: string;
  patientUuid?: string;
  excludeId?: string;
  reportStatus?: ReportStatus;
}

/** An instance as the image server knows it: its id there and its UIDs (ImgsrvClient.decodeRefusal). */
export interface RenderedInstanceRef {
  imgsrvInstanceId: string;
  studyInstanceUid: string;
  seriesInstanceUid: string;
  sopInstanceUid: string;
}

export interface ThumbnailImage {
  contentType: string;
  data: Buffer;
}

const STUDY_COLUMNS = [
  'id',
  'tenant_id',
  'unit_id',
  'patient_uuid',
  'imgsrv_study_id',
  'study_instance_uid',
  'patient_id',
  'patient_name',
  'patient_birth_date',
  'patient_sex',
  'accession_number',
  'study_date',
  'study_description',
  'modalities',
  'report_status',
  'reported_at',
  'reported_by_user_id',
  'created_at',
  'updated_at',
];
const PATIENT_COLUMNS = [
  'id',
  'tenant_id',
  'patient_id',
  'patient_name',
  'patient_birth_date',
  'patient_sex',
  'created_at',
  'updated_at',
];

const EXCHANGED_STUDY_COLUMNS = [
  'id',
  'tenant_id',
  'unit_id',
  'imgsrv_study_id',
  'study_instance_uid',
  'patient_name',
  'study_date',
  'study_description',
  'modalities',
  'report_status',
] as const;

export type StudyToExchange = Pick<Study, (typeof EXCHANGED_STUDY_COLUMNS)[number]>;

const columns = (alias: string, names: readonly string[]) => names.map((name) => `${alias}.${name}`);

/** The studies list (also what the QIDO-RS study search reads). */
export const STUDIES_LIST: ListSpec = {
  from: 'studies s',
  id: 's.id',
  // The list's columns as the API returns them: dates as YYYY-MM-DD text, not JavaScript dates.
  columns: STUDY_COLUMNS.map((name) =>
    name === 'study_date' || name === 'patient_birth_date' ? `s.${name}::text AS ${name}` : `s.${name}`,
  ).join(', '),
  order: 's.study_date DESC, s.created_at DESC, s.id DESC',
  // The same order through an expression (date + 0 is the date) that no index provides.
  unindexedOrder: '(s.study_date + 0) DESC, s.created_at DESC, s.id DESC',
  scope: { tenant: 's.tenant_id', unit: 's.unit_id' },
  searchText: 's.search_text',
  // All in the order indexes (InitialSchema migration).
  walkColumns: 's.id, s.study_date, s.created_at, s.search_text',
  walkFrom: { field: 'study_date', condition: (date) => `s.study_date <= ${date}::date` },
};

/** The studies list's conditions without a search, as SQL with positional parameters. */
export function studyConditions(scope: DataScope, filter: StudyFilter, p: SqlParams, throughTerms = false): string {
  const parts = [listScopeSql(STUDIES_LIST, scope, p, throughTerms)];
  if (filter.patientUuid) parts.push(`s.patient_uuid = ${p.add(filter.patientUuid)}`);
  if (filter.excludeId) parts.push(`s.id <> ${p.add(filter.excludeId)}`);
  if (filter.reportStatus) parts.push(`s.report_status = ${p.add(filter.reportStatus)}`);
  return parts.join(' AND ');
}

/** A search of the studies list (filter.search set), as ListSearch reads it. */
export function studySearch(totals: ListTotals, scope: DataScope, filter: StudyFilter): ListSearchQuery {
  const { search = '', patientUuid = null, excludeId = null, reportStatus = null } = filter;
  return {
    spec: STUDIES_LIST,
    key: JSON.stringify(['studies', scope, patientUuid, excludeId, reportStatus, search]),
    search,
    counters: (p) => totals.studies(scope, p),
    conditions: (p, throughTerms) => studyConditions(scope, filter, p, throughTerms),
    tenants: (p) => scopeTenantsSql(scope, p),
    scopeKey: JSON.stringify(['studies', scope]),
  };
}

// A list row keeps its extra columns (named _*): toStudyDto names every field it writes, and copying
// each row without them cost a tenth of what a list request allocated.
type ListRow = Study & { _total: string | null };

// About 330 bytes of JSON each: a part stays well below V8's large-object size (128 KB).
const INSTANCES_PER_PART = 200;

/** A timestamptz as JavaScript's toISOString() writes it (UTC, milliseconds, "Z"). */
const isoTime = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * Every SQL statement on studies, series, instances and thumbnails. Each method takes the caller's
 * scope, so a record outside it is simply not found. The list queries follow the indexes of the
 * initial migration: (tenant_id | unit_id | patient_uuid, study_date DESC, created_at DESC, id DESC)
 * for scope + order, the search terms index for a search.
 */
@Injectable()
export class StudiesRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly totals: ListTotals,
    private readonly prepared: PreparedQueries,
    private readonly searches: ListSearch,
  ) {}

  private scoped(scope: DataScope): SelectQueryBuilder<Study> {
    const scopeSql = scopeCondition(scope, { tenant: 's.tenant_id', unit: 's.unit_id' });
    return this.db.createQueryBuilder(Study, 's').where(scopeSql.sql, scopeSql.params);
  }

  /**
   * One page in list order and its total over the same conditions (exact but for a search with more
   * than SEARCH_TOTAL_CAP matches: ListSearch). Unfiltered, the scope's counters (study_counts, a row
   * per unit), less the excluded study when it is in the scope; a patient's studies, a direct count
   * (a handful of rows on studies_patient_order_idx): both in the page's own statement. A report
   * status, counted once per scope version and kept (ListTotals), read on studies_report_order_idx.
   */
  async listStudies(
    scope: DataScope,
    filter: StudyFilter,
    offset: number,
    limit: number,
  ): Promise<{ rows: Study[]; total: number; exact: boolean }> {
    if (filter.search) return this.searches.page<Study>(studySearch(this.totals, scope, filter), offset, limit);
    if (filter.reportStatus && !filter.patientUuid) {
      const total = await this.searches.exactTotal({
        spec: STUDIES_LIST,
        key: JSON.stringify(['studies', scope, filter]),
        counters: (p) => this.totals.studies(scope, p),
        conditions: (p) => studyConditions(scope, filter, p),
      });
      if (total <= offset) return { rows: [], total, exact: true };
      const q = new SqlParams();
      const rows = await this.prepared.query<Study>(
        listPageSql(STUDIES_LIST, studyConditions(scope, filter, q), '', q, offset, limit),
        q.values,
      );
      return { rows, total, exact: true };
    }
    const p = new SqlParams();
    const where = studyConditions(scope, filter, p);
    const rows: ListRow[] = await this.prepared.query(
      listPageSql(STUDIES_LIST, where, `, ${this.totalSql(scope, filter, p)} AS _total`, p, offset, limit),
      p.values,
    );
    if (rows.length > 0) return { rows, total: Number(rows[0]._total), exact: true };
    // A page past the end (or an empty scope) has no row to carry the total.
    const q = new SqlParams();
    const [row] = await this.prepared.query<{ _total: string }>(
      `SELECT ${this.totalSql(scope, filter, q)} AS _total`,
      q.values,
    );
    return { rows: [], total: Number(row._total), exact: true };
  }

  private totalSql(scope: DataScope, filter: StudyFilter, p: SqlParams): string {
    if (filter.patientUuid) return listCountSql(STUDIES_LIST, studyConditions(scope, filter, p));
    const counted = this.totals.studies(scope, p).total as string;
    if (!filter.excludeId) return counted;
    const inScope = listScopeSql(STUDIES_LIST, scope, p);
    return `(${counted} - ${listCountSql(STUDIES_LIST, `s.id = ${p.add(filter.excludeId)} AND ${inScope}`)})`;
  }

  /** The study with its patient, unit and tenant, or null when missing or outside the scope. */
  findStudyDetail(scope: DataScope, id: string): Promise<(Study & { unit: Unit; tenant: Tenant }) | null> {
    return this.scoped(scope)
      .andWhere('s.id = :id', { id })
      .select(columns('s', STUDY_COLUMNS))
      .leftJoin('s.patient', 'p')
      .addSelect(columns('p', PATIENT_COLUMNS))
      .innerJoin('s.unit', 'u')
      .addSelect(['u.id', 'u.tenant_id', 'u.name'])
      .innerJoin('s.tenant', 't')
      .addSelect(['t.id', 't.name'])
      .getOne() as Promise<(Study & { unit: Unit; tenant: Tenant }) | null>;
  }

  /** Id, tenant and study UID of a study in the scope, or null. */
  findStudyRef(
    scope: DataScope,
    id: string,
  ): Promise<Pick<Study, 'id' | 'tenant_id' | 'unit_id' | 'study_instance_uid' | 'patient_id'> | null> {
    return this.scoped(scope)
      .andWhere('s.id = :id', { id })
      .select(['s.id', 's.tenant_id', 's.unit_id', 's.study_instance_uid', 's.patient_id'])
      .getOne();
  }

  /**
   * What leaving the archive needs of a study in the scope (a download, a share link): its place,
   * its id on the image server and the fields a recipient is shown; null when missing or outside.
   */
  findStudyToExchange(scope: DataScope, id: string): Promise<StudyToExchange | null> {
    return this.scoped(scope).andWhere('s.id = :id', { id }).select(columns('s', EXCHANGED_STUDY_COLUMNS)).getOne();
  }

  async studyExists(scope: DataScope, id: string): Promise<boolean> {
    return (await this.scoped(scope).andWhere('s.id = :id', { id }).select('s.id').getRawOne()) !== undefined;
  }

  async seriesModalities(studyId: string): Promise<string[]> {
    const rows: Array<{ modality: string }> = await this.db.query(
      `SELECT DISTINCT modality FROM series WHERE study_id = $1 ORDER BY modality`,
      [studyId],
    );
    return rows.map((row) => row.modality);
  }

  /** The series of a study (the caller has checked the study is in scope). */
  listSeries(studyId: string): Promise<Series[]> {
    return this.db
      .createQueryBuilder(Series, 'se')
      .where('se.study_id = :studyId', { studyId })
      .orderBy('se.series_number', 'ASC')
      .addOrderBy('se.created_at', 'ASC')
      .addOrderBy('se.id', 'ASC')
      .getMany();
  }

  /**
   * The instances of a series whose study is in the scope, as the response's JSON text in parts
   * (each the comma-joined objects of up to INSTANCES_PER_PART instances, in list order; an empty
   * array for none), or null when the series is missing or outside the scope. A series holds up to
   * thousands of instances: building the JSON in PostgreSQL (row_to_json of a row with the
   * response's field names in order, times formatted as toISOString() does) spares the API process
   * an object per row and their serialisation, which made this the slowest read. The parts keep each
   * string small enough to die young in V8 (one string of several hundred kilobytes per response
   * went to the old generation and grew the process by a hundred megabytes under load).
   * One statement does the scope check and the list.
   */
  async instancesJson(scope: DataScope, seriesId: string): Promise<string[] | null> {
    const p = new SqlParams();
    const inScope = listScopeSql(STUDIES_LIST, scope, p);
    const series = p.add(seriesId);
    const rows: Array<{ part: string | null }> = await this.prepared.query(
      `SELECT parts.part
         FROM (SELECT se.id FROM series se JOIN studies s ON s.id = se.study_id WHERE se.id = ${series} AND ${inScope}) found
         LEFT JOIN LATERAL (
           SELECT (x.n - 1) / ${INSTANCES_PER_PART} AS chunk, string_agg(x.json, ',' ORDER BY x.n) AS part
             FROM (SELECT row_number() OVER (ORDER BY i.instance_number, i.created_at, i.id) AS n,
                          row_to_json((SELECT d FROM (SELECT i.id, i.series_id, i.imgsrv_instance_id, i.sop_instance_uid,
                            i.instance_number, i.rows, i.columns, i.slice_thickness,
                            ${isoTime('i.created_at')} AS created_at, ${isoTime('i.updated_at')} AS updated_at) d))::text AS json
                     FROM instances i WHERE i.series_id = found.id) x
            GROUP BY (x.n - 1) / ${INSTANCES_PER_PART}) parts ON true
        ORDER BY parts.chunk`,
      p.values,
    );
    if (rows.length === 0) return null;
    return rows.flatMap((row) => (row.part === null ? [] : [row.part]));
  }

  /** An instance whose series belongs to that study, the study in scope: what its rendering asks the image server. */
  async findRenderedInstance(scope: DataScope, studyId: string, instanceId: string): Promise<RenderedInstanceRef | null> {
    const row = await this.scoped(scope)
      .innerJoin(Series, 'se', 'se.study_id = s.id')
      .innerJoin(Instance, 'i', 'i.series_id = se.id')
      .andWhere('s.id = :studyId', { studyId })
      .andWhere('i.id = :instanceId', { instanceId })
      .select('i.imgsrv_instance_id', 'imgsrvInstanceId')
      .addSelect('s.study_instance_uid', 'studyInstanceUid')
      .addSelect('se.series_instance_uid', 'seriesInstanceUid')
      .addSelect('i.sop_instance_uid', 'sopInstanceUid')
      .getRawOne<RenderedInstanceRef>();
    return row ?? null;
  }

  /**
   * Whether the series belongs to the study (null series: not asked). Used before serving a series
   * thumbnail so that a series of another study never falls back to this study's image.
   */
  async seriesOfStudy(scope: DataScope, studyId: string, seriesId: string): Promise<{ study: boolean; series: boolean }> {
    const row = await this.scoped(scope)
      .leftJoin(Series, 'se', 'se.id = :seriesId AND se.study_id = s.id', { seriesId })
      .andWhere('s.id = :studyId', { studyId })
      .select('se.id', 'series_id')
      .getRawOne<{ series_id: string | null }>();
    return { study: row !== undefined, series: !!row?.series_id };
  }

  /** The study's own thumbnail (seriesId null), or the series' one falling back to the study's. */
  async findThumbnail(studyId: string, seriesId: string | null): Promise<ThumbnailImage | null> {
    const rows: Array<{ content_type: string; data: Buffer }> = seriesId
      ? await this.db.query(
          `SELECT content_type, data FROM thumbnails
            WHERE study_id = $1 AND (series_id = $2 OR series_id IS NULL)
            ORDER BY series_id NULLS LAST LIMIT 1`,
          [studyId, seriesId],
        )
      : await this.db.query(`SELECT content_type, data FROM thumbnails WHERE study_id = $1 AND series_id IS NULL LIMIT 1`, [
          studyId,
        ]);
    return rows[0] ? { contentType: rows[0].content_type, data: rows[0].data } : null;
  }

  /**
   * Where each of these study UIDs is held: the study row, its tenant, unit and DICOM Patient ID (a
   * UID may exist in more than one place when two devices sent it under different patients). UIDs
   * absent from the result are unknown.
   */
  async placesOfStudyUids(uids: string[]): Promise<Map<string, StudyPlace[]>> {
    const rows: Array<{ uid: string } & StudyPlace> = await this.db.query(
      `SELECT study_instance_uid AS uid, id::text AS study_id, tenant_id::text AS tenant_id, unit_id::text AS unit_id,
              patient_id
         FROM studies WHERE study_instance_uid = ANY($1::varchar[])`,
      [uids],
    );
    const places = new Map<string, StudyPlace[]>();
    for (const { uid, study_id, tenant_id, unit_id, patient_id } of rows) {
      const place = { study_id, tenant_id, unit_id, patient_id };
      const list = places.get(uid);
      if (list) list.push(place);
      else places.set(uid, [place]);
    }
    return places;
  }
}
