import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * UIDs are stored as sent, never cut to 64 characters: a sender could otherwise make a UID whose
 * first 64 characters are another clinic's study's. varchar(64) to text needs no rewrite of the
 * tables nor of their indexes (binary-coercible); an invalid UID's study goes to quarantine
 * (StudyJobService).
 */
export class UidsUncut1797300000000 implements MigrationInterface {
  name = 'UidsUncut1797300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE studies ALTER COLUMN study_instance_uid TYPE text`);
    await q.query(`ALTER TABLE series ALTER COLUMN series_instance_uid TYPE text`);
    await q.query(`ALTER TABLE instances ALTER COLUMN sop_instance_uid TYPE text`);
  }

  async down(q: QueryRunner): Promise<void> {
    // Refuses while a longer UID is stored: cutting it would bring back the collision.
    await q.query(`ALTER TABLE instances ALTER COLUMN sop_instance_uid TYPE varchar(64)`);
    await q.query(`ALTER TABLE series ALTER COLUMN series_instance_uid TYPE varchar(64)`);
    await q.query(`ALTER TABLE studies ALTER COLUMN study_instance_uid TYPE varchar(64)`);
  }
}
