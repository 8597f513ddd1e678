import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A unit's searches read its clinic's tagged terms (TenantSearchTerms) intersected with the unit's
 * own term: the studies' tagged index gets unit_id as a second column (btree_gin, as the SearchWords
 * index has it). Without it, a unit past the rows a search walks whole (10,000) read the SearchWords
 * index, whose prefix terms expand over the whole archive before the unit's term narrows them: at
 * 3,000,000 studies the bench's unit user (10,154 studies) spent 4.28 ms of PostgreSQL CPU per typed
 * search against 0.86 ms at 1,000,000, where its 3,453 studies are walked (bench/README.md, "Sixth
 * round"). Here the prefix expands over the clinic's own words, and the unit's posting list (as long
 * as the unit) is intersected in the scan. A GIN index answers a condition on either column alone,
 * so the clinic's searches read this index as they read the one it replaces.
 */
export class UnitSearchTerms1796100000000 implements MigrationInterface {
  name = 'UnitSearchTerms1796100000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE INDEX IF NOT EXISTS studies_search_tenant_unit_idx ON studies
        USING gin (search_tenant_lexemes(tenant_id, search_text), unit_id) WITH (fastupdate = off)`);
    await q.query(`DROP INDEX IF EXISTS studies_search_tenant_idx`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE INDEX IF NOT EXISTS studies_search_tenant_idx ON studies
        USING gin (search_tenant_lexemes(tenant_id, search_text)) WITH (fastupdate = off)`);
    await q.query(`DROP INDEX IF EXISTS studies_search_tenant_unit_idx`);
  }
}
