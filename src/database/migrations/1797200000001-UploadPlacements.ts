import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Where a study uploaded through the API (STOW-RS) goes: recorded before its first instance is
 * stored, so that ingestion places the study in the uploader's unit instead of quarantine (the
 * image server records such instances as REST uploads, with no device to place them by).
 */
export class UploadPlacements1797200000001 implements MigrationInterface {
  name = 'UploadPlacements1797200000001';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE upload_placements (
        study_instance_uid varchar(64) PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        unit_id uuid NOT NULL REFERENCES units (id) ON DELETE CASCADE,
        uploaded_by_user_id uuid NULL REFERENCES users (id) ON DELETE SET NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS upload_placements`);
  }
}
