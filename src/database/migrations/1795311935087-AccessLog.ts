import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Who opened which study, image or viewer token: the clinic's compliance trail. No foreign keys on
 * purpose: the trail must outlive the records it names and must not slow their writes; rows are
 * only ever inserted in batches (src/audit).
 */
export class AccessLog1795311935087 implements MigrationInterface {
  name = 'AccessLog1795311935087';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE access_logs (
        id bigserial PRIMARY KEY,
        occurred_at timestamptz NOT NULL,
        action varchar(32) NOT NULL,
        user_id uuid NULL,
        tenant_id uuid NULL,
        study_id uuid NULL,
        target_id uuid NULL,
        ip varchar(64) NULL,
        request_id varchar(128) NULL
      )`);
    await q.query(`CREATE INDEX access_logs_tenant_time_idx ON access_logs (tenant_id, occurred_at DESC)`);
    await q.query(`CREATE INDEX access_logs_study_time_idx ON access_logs (study_id, occurred_at DESC)`);
    await q.query(`CREATE INDEX access_logs_user_time_idx ON access_logs (user_id, occurred_at DESC)`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS access_logs`);
  }
}
