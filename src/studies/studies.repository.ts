import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Brackets, DataSource, SelectQueryBuilder } from 'typeorm';
import { DataScope, scopeCondition } from '../common/auth/data-scope';
import { likePattern } from '../common/pagination';
import { Instance, Series, Study, Tenant, Unit } from '../database/entities';
import { ListTotals } from './list-totals';

export interface StudyFilter {
  search?: string;
  patientUuid?: string;
  excludeId?: string;
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

const columns = (alias: string, names: string[]) => names.map((name) => `${alias}.${name}`);

/**
 * Every SQL statement on studies, series, instances and thumbnails. Each method takes the caller's
 * scope, so a record outside it is simply not found. The list queries follow the indexes of the
 * initial migration: (tenant_id | unit_id | patient_uuid, study_date DESC, created_at DESC, id DESC)
 * for scope + order, pg_trgm GIN indexes for the ILIKE search.
 */
@Injectable()
export class StudiesRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly totals: ListTotals,
  ) {}

  private scoped(scope: DataScope): SelectQueryBuilder<Study> {
    const scopeSql = scopeCondition(scope, { tenant: 's.tenant_id', unit: 's.unit_id' });
    return this.db.createQueryBuilder(Study, 's').where(scopeSql.sql, scopeSql.params);
  }

  private filtered(scope: DataScope, filter: StudyFilter): SelectQueryBuilder<Study> {
    const qb = this.scoped(scope);
    if (filter.patientUuid) qb.andWhere('s.patient_uuid = :patientUuid', { patientUuid: filter.patientUuid });
    if (filter.excludeId) qb.andWhere('s.id <> :excludeId', { excludeId: filter.excludeId });
    if (filter.search) {
      const pattern = likePattern(filter.search);
      qb.andWhere(
        new Brackets((or) =>
          or
            .where('s.patient_name ILIKE :pattern', { pattern })
            .orWhere('s.patient_id ILIKE :pattern')
            .orWhere('s.accession_number ILIKE :pattern'),
        ),
      );
    }
    return qb;
  }

  /**
   * One page in list order, and the total over the same conditions.
   * The page is a deferred join: the ids of the page are found first (for a tenant, an index-only
   * scan of studies_tenant_order_idx, however deep the page), and only those 15 rows are read whole.
   * The total never counts a whole scope per page: see total().
   */
  async listStudies(
    scope: DataScope,
    filter: StudyFilter,
    offset: number,
    limit: number,
  ): Promise<{ rows: Study[]; total: number }> {
    const pageIds = this.filtered(scope, filter)
      .select('s.id')
      .orderBy('s.study_date', 'DESC')
      .addOrderBy('s.created_at', 'DESC')
      .addOrderBy('s.id', 'DESC')
      .offset(offset)
      .limit(limit);
    const page = this.db
      .createQueryBuilder(Study, 'page')
      .select(columns('page', STUDY_COLUMNS))
      .where(`page.id IN (${pageIds.getQuery()})`)
      .setParameters(pageIds.getParameters())
      .orderBy('page.study_date', 'DESC')
      .addOrderBy('page.created_at', 'DESC')
      .addOrderBy('page.id', 'DESC');
    const [rows, total] = await Promise.all([page.getMany(), this.total(scope, filter)]);
    return { rows, total };
  }

  /**
   * Exact totals at the cost of a few rows: unfiltered, the scope's counters (study_counts, one row
   * per unit), less the excluded study when it is in the scope; a patient's studies, a direct count
   * (a handful of rows on studies_patient_order_idx); a search, counted once per scope version and
   * kept (ListTotals), because a common name fragment matches tens of thousands of rows that only a
   * heap visit each can confirm.
   */
  private async total(scope: DataScope, filter: StudyFilter): Promise<number> {
    if (filter.search) {
      const { version } = await this.totals.studies(scope);
      const key = JSON.stringify(['studies', scope, filter.patientUuid ?? null, filter.excludeId ?? null, filter.search]);
      return this.totals.cached(key, version, this.filtered(scope, filter), this.totals.studyVersion(scope));
    }
    if (filter.patientUuid) {
      const counted = await this.filtered(scope, filter).select('COUNT(*)::int', 'total').getRawOne<{ total: number }>();
      return counted?.total ?? 0;
    }
    const [{ total }, excluded] = await Promise.all([
      this.totals.studies(scope),
      filter.excludeId ? this.studyExists(scope, filter.excludeId) : Promise.resolve(false),
    ]);
    return excluded ? total - 1 : total;
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
  findStudyRef(scope: DataScope, id: string): Promise<Pick<Study, 'id' | 'tenant_id' | 'study_instance_uid'> | null> {
    return this.scoped(scope)
      .andWhere('s.id = :id', { id })
      .select(['s.id', 's.tenant_id', 's.study_instance_uid'])
      .getOne();
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

  /** True when the series exists and its study is in the scope. */
  async seriesInScope(scope: DataScope, seriesId: string): Promise<boolean> {
    const found = await this.scoped(scope)
      .innerJoin(Series, 'se', 'se.study_id = s.id')
      .andWhere('se.id = :seriesId', { seriesId })
      .select('se.id')
      .getRawOne();
    return found !== undefined;
  }

  listInstances(seriesId: string): Promise<Instance[]> {
    return this.db
      .createQueryBuilder(Instance, 'i')
      .where('i.series_id = :seriesId', { seriesId })
      .orderBy('i.instance_number', 'ASC')
      .addOrderBy('i.created_at', 'ASC')
      .addOrderBy('i.id', 'ASC')
      .getMany();
  }

  /** The image server's id of an instance whose series belongs to that study, the study in scope. */
  async findImgsrvInstanceId(scope: DataScope, studyId: string, instanceId: string): Promise<string | null> {
    const row = await this.scoped(scope)
      .innerJoin(Series, 'se', 'se.study_id = s.id')
      .innerJoin(Instance, 'i', 'i.series_id = se.id')
      .andWhere('s.id = :studyId', { studyId })
      .andWhere('i.id = :instanceId', { instanceId })
      .select('i.imgsrv_instance_id', 'imgsrv_instance_id')
      .getRawOne<{ imgsrv_instance_id: string }>();
    return row?.imgsrv_instance_id ?? null;
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
      : await this.db.query(
          `SELECT content_type, data FROM thumbnails WHERE study_id = $1 AND series_id IS NULL LIMIT 1`,
          [studyId],
        );
    return rows[0] ? { contentType: rows[0].content_type, data: rows[0].data } : null;
  }

  /**
   * The tenants that hold each of these study UIDs (a UID may exist in more than one tenant when two
   * devices sent it under different patients). UIDs absent from the result are unknown.
   */
  async tenantsOfStudyUids(uids: string[]): Promise<Map<string, string[]>> {
    const rows: Array<{ uid: string; tenants: string[] }> = await this.db.query(
      `SELECT study_instance_uid AS uid, array_agg(DISTINCT tenant_id::text) AS tenants
         FROM studies WHERE study_instance_uid = ANY($1::varchar[]) GROUP BY study_instance_uid`,
      [uids],
    );
    return new Map(rows.map((row) => [row.uid, row.tenants]));
  }
}
