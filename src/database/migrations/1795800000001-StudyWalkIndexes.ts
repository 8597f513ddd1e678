import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The studies' list-order indexes also hold `search_text` (bench/README.md, "Search"), so a search
 * that walks the list order (a common fragment: see searchPlan) tests each row inside the index,
 * in order, and visits the heap only for the page's own rows. Before, each row walked was a heap
 * visit: "eira ol" walked 11,448 rows of the whole archive's order for the largest clinic's page 1
 * (6.9 ms, 623 buffers); through the clinic's index with the text beside the key, 2,236 entries and
 * 15 rows fetched (1.8 ms cold, 107 buffers). The unit index also holds tenant_id, which a unit
 * scope tests too. About 45 bytes more per study in each of the three indexes.
 */
const INDEXES = [
  { name: 'studies_order_idx', key: '(study_date DESC, created_at DESC, id DESC)', include: 'search_text' },
  { name: 'studies_tenant_order_idx', key: '(tenant_id, study_date DESC, created_at DESC, id DESC)', include: 'search_text' },
  {
    name: 'studies_unit_order_idx',
    key: '(unit_id, study_date DESC, created_at DESC, id DESC)',
    include: 'tenant_id, search_text',
  },
];

export class StudyWalkIndexes1795800000001 implements MigrationInterface {
  name = 'StudyWalkIndexes1795800000001';

  public async up(q: QueryRunner): Promise<void> {
    for (const index of INDEXES) {
      await q.query(`DROP INDEX ${index.name}`);
      await q.query(`CREATE INDEX ${index.name} ON studies ${index.key} INCLUDE (${index.include})`);
    }
  }

  public async down(q: QueryRunner): Promise<void> {
    for (const index of INDEXES) {
      await q.query(`DROP INDEX ${index.name}`);
      await q.query(`CREATE INDEX ${index.name} ON studies ${index.key}`);
    }
  }
}
