import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, SelectQueryBuilder } from 'typeorm';
import { DataScope, scopeCondition } from '../common/auth/data-scope';

/** Which entries a reader of the trail asks for, within what the reader's scope sees. */
export interface AccessTrailFilter {
  scope: DataScope;
  /** A super admin's choice of clinic. */
  tenantId?: string;
  patientId?: string;
  studyId?: string;
  userId?: string;
  action?: string;
  /** At or after this instant. */
  from?: string;
  /** At or before this instant. */
  to?: string;
  /** Strictly before this instant (the end of a date given without a time). */
  before?: string;
}

/** One entry as read back, with its user's name. */
export interface AccessTrailRow {
  id: string;
  occurred_at: Date;
  action: string;
  user_id: string | null;
  user_name: string | null;
  share_id: string | null;
  tenant_id: string | null;
  study_id: string | null;
  patient_id: string | null;
  ip: string | null;
  result_count: number | null;
}

/** Where a walk through the trail, newest first, has got to. */
export interface TrailCursor {
  occurredAt: Date;
  id: string;
}

/**
 * Reads of access_logs (written by AccessLogRepository only; nothing here changes or deletes an
 * entry). Newest first: occurred_at, then id, served by the (tenant_id, occurred_at) index and, for
 * a patient, by (tenant_id, patient_id, occurred_at).
 */
@Injectable()
export class AccessTrailRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async count(filter: AccessTrailFilter): Promise<number> {
    const row = await this.filtered(filter).select('COUNT(*)::int', 'count').getRawOne<{ count: number }>();
    return row?.count ?? 0;
  }

  page(filter: AccessTrailFilter, offset: number, limit: number): Promise<AccessTrailRow[]> {
    return this.newestFirst(filter).offset(offset).limit(limit).getRawMany<AccessTrailRow>();
  }

  /** The next `limit` entries older than `after` (from the newest when null): the CSV export's batches. */
  after(filter: AccessTrailFilter, after: TrailCursor | null, limit: number): Promise<AccessTrailRow[]> {
    const qb = this.newestFirst(filter);
    if (after) {
      qb.andWhere('(a.occurred_at, a.id) < (:afterAt, :afterId)', { afterAt: after.occurredAt, afterId: after.id });
    }
    return qb.limit(limit).getRawMany<AccessTrailRow>();
  }

  private newestFirst(filter: AccessTrailFilter): SelectQueryBuilder<object> {
    return this.filtered(filter)
      .leftJoin('users', 'u', 'u.id = a.user_id')
      .select([
        'a.id::text AS id',
        'a.occurred_at AS occurred_at',
        'a.action AS action',
        'a.user_id AS user_id',
        'u.name AS user_name',
        'a.share_id AS share_id',
        'a.tenant_id AS tenant_id',
        'a.study_id AS study_id',
        'a.patient_id AS patient_id',
        'a.ip AS ip',
        'a.result_count AS result_count',
      ])
      .orderBy('a.occurred_at', 'DESC')
      .addOrderBy('a.id', 'DESC');
  }

  private filtered(filter: AccessTrailFilter): SelectQueryBuilder<object> {
    const visible = scopeCondition(filter.scope, { tenant: 'a.tenant_id' });
    const qb = this.db.createQueryBuilder().from('access_logs', 'a').where(visible.sql, visible.params);
    if (filter.tenantId) qb.andWhere('a.tenant_id = :tenantId', { tenantId: filter.tenantId });
    if (filter.patientId !== undefined) qb.andWhere('a.patient_id = :patientId', { patientId: filter.patientId });
    if (filter.studyId) qb.andWhere('a.study_id = :studyId', { studyId: filter.studyId });
    if (filter.userId) qb.andWhere('a.user_id = :userId', { userId: filter.userId });
    if (filter.action) qb.andWhere('a.action = :action', { action: filter.action });
    if (filter.from) qb.andWhere('a.occurred_at >= :from', { from: filter.from });
    if (filter.to) qb.andWhere('a.occurred_at <= :to', { to: filter.to });
    if (filter.before) qb.andWhere('a.occurred_at < :before', { before: filter.before });
    return qb;
  }
}
