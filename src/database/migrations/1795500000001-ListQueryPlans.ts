import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What EXPLAIN at 1,000,000 studies asked for (bench/README.md):
 *
 * - A unit scope is written `tenant_id = $1 AND unit_id = $2`. Without knowing that a unit implies
 *   its tenant, the planner multiplies both selectivities, underestimates a unit's studies by about
 *   five times and ANDs in a bitmap of the whole tenant (200,000 entries for the largest one).
 *   Functional-dependency statistics tell it; ANALYZE fills them now, since they are empty until then.
 * - A unit user's patients are those with a study in the unit (an EXISTS per patient, or a semi-join
 *   of the unit's studies): (unit_id, patient_uuid) INCLUDE (tenant_id) answers it from the index
 *   alone, instead of a heap visit per study.
 * - The trigram GIN indexes keep new entries in a pending list by default, which every search then
 *   scans linearly and which an insert must merge once it reaches 4 MB (a stall of the ingestion at
 *   an arbitrary moment). Studies arrive a few per second at most: entries go straight into the index.
 */
export class ListQueryPlans1795500000001 implements MigrationInterface {
  name = 'ListQueryPlans1795500000001';

  private readonly trigramIndexes = [
    'studies_patient_name_trgm',
    'studies_patient_id_trgm',
    'studies_accession_trgm',
    'patients_name_trgm',
    'patients_pid_trgm',
  ];

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE STATISTICS studies_tenant_unit_stats (dependencies) ON tenant_id, unit_id FROM studies`);
    await q.query(`CREATE INDEX studies_unit_patient_idx ON studies (unit_id, patient_uuid) INCLUDE (tenant_id)`);
    for (const index of this.trigramIndexes) {
      await q.query(`ALTER INDEX ${index} SET (fastupdate = off)`);
      await q.query(`SELECT gin_clean_pending_list('${index}'::regclass)`);
    }
    await q.query(`ANALYZE studies`);
  }

  public async down(q: QueryRunner): Promise<void> {
    for (const index of this.trigramIndexes) await q.query(`ALTER INDEX ${index} RESET (fastupdate)`);
    await q.query(`DROP INDEX IF EXISTS studies_unit_patient_idx`);
    await q.query(`DROP STATISTICS IF EXISTS studies_tenant_unit_stats`);
  }
}
