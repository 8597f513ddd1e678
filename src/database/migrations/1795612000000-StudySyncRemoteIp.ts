import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A device is its AE title and its address (decisions.md): the study's sender address, as the image
 * server recorded it (`RemoteIP`), is kept beside its AE title, so that a quarantined study is
 * released only to a modality registered with both. NULL: not read since this migration (the
 * reconciliation queues such a study again once, which reads it); '' when the image server has none.
 */
export class StudySyncRemoteIp1795612000000 implements MigrationInterface {
  name = 'StudySyncRemoteIp1795612000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE imgsrv_study_sync ADD COLUMN remote_ip varchar(64) NULL`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE imgsrv_study_sync DROP COLUMN IF EXISTS remote_ip`);
  }
}
