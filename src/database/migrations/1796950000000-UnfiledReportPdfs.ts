import { MigrationInterface, QueryRunner } from 'typeorm';

/** The report PDFs not filed in the image server yet, which the worker's filing sweep reads every minute. */
export class UnfiledReportPdfs1796950000000 implements MigrationInterface {
  name = 'UnfiledReportPdfs1796950000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX report_pdfs_unfiled_idx ON report_pdfs (created_at) WHERE filed_instance_id IS NULL`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX report_pdfs_unfiled_idx`);
  }
}
