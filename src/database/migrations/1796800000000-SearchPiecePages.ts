import { MigrationInterface, QueryRunner } from 'typeorm';
import {
  PIECE_PAGE_FUNCTIONS_SQL,
  PIECE_PAGE_TRIGGERS_SQL,
  PIECE_PAGES_TABLE,
  REBUILD_PIECE_PAGES_SQL,
} from '../migration-sql/piece-page-triggers';
import { rebuildListCountsSql } from '../migration-sql/list-counter-triggers';

/**
 * A clinic's first page of a common fragment, kept. A first search whose fragment is one piece
 * (its total a piece count's: listSearchCountSql) had its total from an index-only read, and then
 * still found its page: it collected every match through the search index (50-599 matches: a heap
 * visit each, 294 blocks and 2.32 ms a statement) or walked thousands of the order index's entries.
 * Those were 41% of the tenant admin's first searches at 1,000,000 studies and 60% of their
 * PostgreSQL time (bench/README.md, "Seventeenth round").
 *
 * study_tenant_piece_pages holds, per tenant and piece with 50 matches or more
 * (PIECE_PAGE_MIN_MATCHES), the first 15 studies in list order (a page of GET /api/studies): a
 * first search of the tenant admin reads them as one range of its primary key. Pieces of both
 * kinds: of one word (their counts per unit, summed over the tenant) and the tenant pieces. About 9
 * rows per study (1.76 million for the largest clinic of the 1,000,000 seed), where postings of
 * every such piece would be 192. Only a whole tenant's scope reads them: a unit's would be pages
 * per unit.
 *
 * Kept by statement triggers on studies after the piece counts' (piece-page-triggers.ts): a new
 * study (the newest, at the top of its pages) joins the pages of its pieces and pushes their 16th
 * out; a study that leaves a page (deleted, moved, renamed, redated) has it refilled from the
 * studies by the fragment's LIKE; a piece that reaches 50 matches gets its page, one that falls
 * below loses it. rebuild_list_counts() rebuilds them after the piece counts.
 */
export class SearchPiecePages1796800000000 implements MigrationInterface {
  name = 'SearchPiecePages1796800000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE ${PIECE_PAGES_TABLE} (
        tenant_id uuid NOT NULL,
        piece text NOT NULL,
        study_date date NOT NULL,
        created_at timestamptz NOT NULL,
        study_id uuid NOT NULL,
        PRIMARY KEY (tenant_id, piece, study_date, created_at, study_id)
      )`);
    for (const sql of PIECE_PAGE_FUNCTIONS_SQL) await q.query(sql);
    await q.query(REBUILD_PIECE_PAGES_SQL);
    // Writers wait until the migration commits, so the pages are exact from the start.
    await q.query(`LOCK TABLE studies IN SHARE MODE`);
    for (const sql of PIECE_PAGE_TRIGGERS_SQL) await q.query(sql);
    await q.query(rebuildListCountsSql(['rebuild_search_piece_counts', 'rebuild_study_tenant_piece_pages']));
    await q.query(`SELECT rebuild_study_tenant_piece_pages()`);
    await q.query(`ANALYZE ${PIECE_PAGES_TABLE}`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(rebuildListCountsSql(['rebuild_search_piece_counts']));
    for (const event of ['insert', 'delete', 'update', 'truncate']) {
      await q.query(`DROP TRIGGER studies_tenant_piece_pages_${event} ON studies`);
      await q.query(`DROP FUNCTION ${PIECE_PAGES_TABLE}_on_${event}()`);
    }
    await q.query(`DROP FUNCTION rebuild_study_tenant_piece_pages()`);
    await q.query(`DROP FUNCTION study_tenant_piece_pages_keep(study_piece_page_row[], study_piece_page_row[])`);
    await q.query(`DROP FUNCTION search_piece_tenant_matches(uuid, text)`);
    await q.query(`DROP FUNCTION search_page_pieces(text)`);
    await q.query(`DROP TYPE study_piece_page_row`);
    await q.query(`DROP TABLE ${PIECE_PAGES_TABLE}`);
  }
}
