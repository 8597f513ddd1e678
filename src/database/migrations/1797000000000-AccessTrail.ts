import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The access trail of decisions.md 3e: an entry names the share it went through, the study's DICOM
 * Patient ID (what a clinic searches by when a patient asks who saw their data) and, for a search,
 * how many studies it returned. The patient index serves `GET /api/audit/access?patient_id=` within a
 * clinic, newest first.
 */
export class AccessTrail1797000000000 implements MigrationInterface {
  name = 'AccessTrail1797000000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE access_logs
        ADD COLUMN share_id uuid NULL,
        ADD COLUMN patient_id varchar(64) NULL,
        ADD COLUMN result_count integer NULL`);
    await q.query(
      `CREATE INDEX access_logs_tenant_patient_time_idx ON access_logs (tenant_id, patient_id, occurred_at DESC)
        WHERE patient_id IS NOT NULL`,
    );
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS access_logs_tenant_patient_time_idx`);
    await q.query(`ALTER TABLE access_logs DROP COLUMN share_id, DROP COLUMN patient_id, DROP COLUMN result_count`);
  }
}
