import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { beforeDatabaseClose } from '../database/database.module';

/** One row of access_logs as the buffer holds it. */
export interface AccessLogRow {
  occurred_at: Date;
  action: string;
  user_id: string | null;
  tenant_id: string | null;
  study_id: string | null;
  target_id: string | null;
  share_id: string | null;
  patient_id: string | null;
  result_count: number | null;
  ip: string | null;
  request_id: string | null;
}

@Injectable()
export class AccessLogRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** `write` runs at shutdown before the database connections close, whenever that comes. */
  beforeClose(write: () => Promise<void>): void {
    beforeDatabaseClose(this.db, write);
  }

  /**
   * One multi-row INSERT for the whole batch (one array per column, so the statement is the same
   * whatever the batch size). The tenant recorded is the one that owns the study when the study is
   * known: a super admin opening a clinic's study is logged under that clinic; so is the study's
   * DICOM Patient ID, when the caller did not give it.
   */
  async insertBatch(rows: AccessLogRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.db.query(
      `INSERT INTO access_logs (occurred_at, action, user_id, tenant_id, study_id, target_id, share_id, patient_id,
                                result_count, ip, request_id)
       SELECT v.occurred_at, v.action, v.user_id, COALESCE(s.tenant_id, v.tenant_id), v.study_id, v.target_id,
              v.share_id, COALESCE(v.patient_id, s.patient_id), v.result_count, v.ip, v.request_id
         FROM unnest($1::timestamptz[], $2::varchar[], $3::uuid[], $4::uuid[], $5::uuid[], $6::uuid[],
                     $7::uuid[], $8::varchar[], $9::int[], $10::varchar[], $11::varchar[]) WITH ORDINALITY
              AS v(occurred_at, action, user_id, tenant_id, study_id, target_id, share_id, patient_id, result_count,
                   ip, request_id, n)
         LEFT JOIN studies s ON s.id = v.study_id
        -- The join may reorder rows; ids must follow the order in which the accesses happened.
        ORDER BY v.n`,
      [
        rows.map((r) => r.occurred_at.toISOString()),
        rows.map((r) => r.action),
        rows.map((r) => r.user_id),
        rows.map((r) => r.tenant_id),
        rows.map((r) => r.study_id),
        rows.map((r) => r.target_id),
        rows.map((r) => r.share_id),
        rows.map((r) => r.patient_id),
        rows.map((r) => r.result_count),
        rows.map((r) => r.ip),
        rows.map((r) => r.request_id),
      ],
    );
  }
}
