import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Search indexes that know the tenant. A tenant's search used trigram GIN indexes over the whole
 * table, so finding a tenant's few hundred matches of a rare name meant visiting (and rechecking)
 * the matches of every tenant: five times more heap pages for the largest tenant, a hundred times
 * more for a small one. With btree_gin, (tenant_id, column gin_trgm_ops) intersects the tenant and
 * the trigrams inside the index; measured at 1,000,000 studies, a rare surname's page went from
 * 7-9 ms to 4-5 ms of PostgreSQL time (bench/README.md). A multicolumn GIN index serves a condition
 * on its second column alone just as well, so these replace the single-column ones (a super admin's
 * search has no tenant).
 */
export class TenantTrigramIndexes1795500000002 implements MigrationInterface {
  name = 'TenantTrigramIndexes1795500000002';

  private readonly indexes = [
    { table: 'studies', column: 'patient_name', old: 'studies_patient_name_trgm', name: 'studies_tenant_patient_name_trgm' },
    { table: 'studies', column: 'patient_id', old: 'studies_patient_id_trgm', name: 'studies_tenant_patient_id_trgm' },
    { table: 'studies', column: 'accession_number', old: 'studies_accession_trgm', name: 'studies_tenant_accession_trgm' },
    { table: 'patients', column: 'patient_name', old: 'patients_name_trgm', name: 'patients_tenant_name_trgm' },
    { table: 'patients', column: 'patient_id', old: 'patients_pid_trgm', name: 'patients_tenant_pid_trgm' },
  ];

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE EXTENSION IF NOT EXISTS btree_gin`);
    for (const index of this.indexes) {
      // No pending list (see ListQueryPlans): entries go straight into the index.
      await q.query(
        `CREATE INDEX ${index.name} ON ${index.table} USING gin (tenant_id, ${index.column} gin_trgm_ops) WITH (fastupdate = off)`,
      );
      await q.query(`DROP INDEX ${index.old}`);
    }
  }

  public async down(q: QueryRunner): Promise<void> {
    for (const index of this.indexes) {
      await q.query(
        `CREATE INDEX ${index.old} ON ${index.table} USING gin (${index.column} gin_trgm_ops) WITH (fastupdate = off)`,
      );
      await q.query(`DROP INDEX ${index.name}`);
    }
    // btree_gin stays: another object may have come to use it.
  }
}
