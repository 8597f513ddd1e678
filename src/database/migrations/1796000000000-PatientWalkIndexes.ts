import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The patients' list-order indexes also hold `search_text`, as the studies' do (StudyWalkIndexes),
 * so a patients search that walks the name order tests each row inside the index and visits the
 * heap only for the page's rows. Before, each row walked was a heap visit, and the walk had no cap:
 * "maria" in the largest clinic at 1,000,000 studies (63,362 patients) has its 15th match at the
 * 42,435th name (the first name sorts them together), a 43-50 ms walk; through the index with the
 * text beside the key, 11 ms (bench/README.md, "Fifth round").
 */
const INDEXES = [
  { name: 'patients_order_idx', key: '(patient_name, created_at DESC, id)' },
  { name: 'patients_tenant_order_idx', key: '(tenant_id, patient_name, created_at DESC, id)' },
];

export class PatientWalkIndexes1796000000000 implements MigrationInterface {
  name = 'PatientWalkIndexes1796000000000';

  public async up(q: QueryRunner): Promise<void> {
    for (const index of INDEXES) {
      await q.query(`DROP INDEX ${index.name}`);
      await q.query(`CREATE INDEX ${index.name} ON patients ${index.key} INCLUDE (search_text)`);
    }
  }

  public async down(q: QueryRunner): Promise<void> {
    for (const index of INDEXES) {
      await q.query(`DROP INDEX ${index.name}`);
      await q.query(`CREATE INDEX ${index.name} ON patients ${index.key}`);
    }
  }
}
