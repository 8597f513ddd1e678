import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Ingestion bookkeeping, in PostgreSQL so it survives Redis being flushed:
 * - imgsrv_sync_state: small key/value settings, e.g. the position in the image server's change feed
 *   that the reconciliation job has read up to.
 * - imgsrv_study_sync: per study, the device AE title it came from (so a quarantined study is
 *   picked up again once its device is registered) and up to which change sequence number and
 *   LastUpdate the last complete indexing reflects (so reconciliation and import skip studies that
 *   are already current; null until the study has been indexed once).
 */
export class ImgsrvSyncState1795400000000 implements MigrationInterface {
  name = 'ImgsrvSyncState1795400000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE imgsrv_sync_state (
        key varchar(64) PRIMARY KEY,
        value text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE imgsrv_study_sync (
        imgsrv_study_id varchar(64) PRIMARY KEY REFERENCES studies(imgsrv_study_id) ON DELETE CASCADE,
        remote_aet varchar(64) NULL,
        indexed_seq bigint NULL,
        last_update varchar(32) NULL,
        indexed_at timestamptz NULL
      )`);
    await q.query(`CREATE INDEX imgsrv_study_sync_remote_aet_idx ON imgsrv_study_sync (remote_aet)`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS imgsrv_study_sync`);
    await q.query(`DROP TABLE IF EXISTS imgsrv_sync_state`);
  }
}
