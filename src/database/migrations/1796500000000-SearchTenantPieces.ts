import { MigrationInterface, QueryRunner } from 'typeorm';
import {
  dropPieceCountTriggersSql,
  PATIENT_PAIR_PIECE_COUNTS,
  PATIENT_PIECE_COUNTS,
  PATIENT_TENANT_PIECE_COUNTS,
  PieceCountTable,
  pieceCountFunctionsSql,
  pieceCountsTable,
  pieceCountTriggersSql,
  rebuildPieceCountsSql,
  STUDY_PAIR_PIECE_COUNTS,
  STUDY_PIECE_COUNTS,
  STUDY_TENANT_PIECE_COUNTS,
  truncatePieceCountsSql,
} from '../migration-sql/piece-count-triggers';

/**
 * Exact totals without a heap visit per match for fragments of 5-6 characters with a digit: a
 * zero-padded patient id's start ("00020": 3,574 studies of the largest clinic at 1,000,000, 4.5-5.7
 * ms to count and no other shape as slow so often) or any 5-6 digits of an id or accession number.
 * The other piece counts leave out every piece of 5+ characters with a digit (nearly unique, tens
 * per record); of 5-6 characters there are at most 10^5 and 10^6 digit strings, and a tenant's ids
 * and accession numbers share most of them: 448,079 distinct pieces per tenant for 262,694 studies
 * of ten tenants, where their 7- and 8-character pieces alone add 1,172,483, 1.8-3.9 studies each,
 * cheap to count through the search index (bench/README.md, "Tenth round").
 *
 * Kept per tenant, with the pair pieces (SearchPairPieces): their tables become the tenant piece
 * tables (study_tenant_piece_counts, patient_tenant_piece_counts), counted by
 * search_tenant_pieces(), the pair pieces and search_digit_pieces(); search_tenant_piece() names
 * the fragments they answer. The two kinds never share a piece (a pair piece has a separator, a
 * digit piece none), so the digit pieces are added to the kept counts, not recounted with them.
 */
const SEARCH_DIGIT_PIECES = `
      CREATE FUNCTION search_digit_pieces(folded text) RETURNS text[]
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
        AS $$
        DECLARE
          word text;
          piece text;
          pieces text[] := '{}';
        BEGIN
          -- Every word (run of letters and digits) with a digit in it.
          FOR word IN SELECT m[1] FROM regexp_matches(folded, '([[:alnum:]]*[[:digit:]][[:alnum:]]*)', 'g') m LOOP
            FOR n IN 5 .. 6 LOOP
              FOR i IN 1 .. length(word) - n + 1 LOOP
                piece := substr(word, i, n);
                IF piece ~ '[[:digit:]]' THEN
                  pieces := pieces || piece;
                END IF;
              END LOOP;
            END LOOP;
          END LOOP;
          RETURN ARRAY(SELECT DISTINCT unnest(pieces));
        END
        $$`;

const SEARCH_TENANT_PIECES = `
      CREATE FUNCTION search_tenant_pieces(folded text) RETURNS text[]
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
        AS $$ BEGIN RETURN search_pair_pieces(folded) || search_digit_pieces(folded); END $$`;

// A pair piece's shape (search_pair_piece), or 5-6 letters and digits with a digit among them.
const SEARCH_TENANT_PIECE = `
      CREATE FUNCTION search_tenant_piece(fragment text) RETURNS text
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
        AS $$
        DECLARE
          folded text := search_fold(fragment);
        BEGIN
          RETURN CASE WHEN folded ~ '^[[:alnum:]]{5,6}$' AND folded ~ '[[:digit:]]' THEN folded
                      ELSE search_pair_piece(fragment) END;
        END
        $$`;

const PAIRS = [STUDY_PAIR_PIECE_COUNTS, PATIENT_PAIR_PIECE_COUNTS];
const TENANTS = [STUDY_TENANT_PIECE_COUNTS, PATIENT_TENANT_PIECE_COUNTS];

/** `from`'s table and its primary key renamed to `to`'s. */
const renameSql = (from: PieceCountTable, to: PieceCountTable): string[] => [
  `ALTER TABLE ${pieceCountsTable(from)} RENAME TO ${pieceCountsTable(to)}`,
  `ALTER INDEX ${pieceCountsTable(from)}_pkey RENAME TO ${pieceCountsTable(to)}_pkey`,
];

export class SearchTenantPieces1796500000000 implements MigrationInterface {
  name = 'SearchTenantPieces1796500000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(SEARCH_DIGIT_PIECES);
    await q.query(SEARCH_TENANT_PIECES);
    await q.query(SEARCH_TENANT_PIECE);
    // Writers wait until the migration commits, so the counts are exact from the start.
    await q.query(`LOCK TABLE studies, patients IN SHARE MODE`);
    for (const t of PAIRS) for (const sql of dropPieceCountTriggersSql(t)) await q.query(sql);
    await q.query(`DROP FUNCTION pair_piece_counts_on_truncate()`);
    for (const [i, t] of TENANTS.entries()) {
      for (const sql of renameSql(PAIRS[i], t)) await q.query(sql);
      for (const sql of pieceCountFunctionsSql(t)) await q.query(sql);
    }
    await q.query(
      truncatePieceCountsSql('tenant_piece_counts_on_truncate', STUDY_TENANT_PIECE_COUNTS, PATIENT_TENANT_PIECE_COUNTS),
    );
    for (const t of TENANTS) {
      for (const sql of pieceCountTriggersSql(t, 'tenant_piece_counts_on_truncate')) await q.query(sql);
    }
    await q.query(rebuildPieceCountsSql([STUDY_PIECE_COUNTS, PATIENT_PIECE_COUNTS, ...TENANTS], true));
    for (const t of TENANTS) {
      await q.query(`
        INSERT INTO ${pieceCountsTable(t)} (piece, tenant_id, ${t.count})
        SELECT x.piece, r.tenant_id, count(*)
          FROM ${t.table} r, unnest(search_digit_pieces(r.search_text)) x(piece)
         GROUP BY 1, 2 ORDER BY 1, 2`);
      await q.query(`ANALYZE ${pieceCountsTable(t)}`);
    }
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`LOCK TABLE studies, patients IN SHARE MODE`);
    for (const t of TENANTS) for (const sql of dropPieceCountTriggersSql(t)) await q.query(sql);
    await q.query(`DROP FUNCTION tenant_piece_counts_on_truncate()`);
    for (const [i, t] of PAIRS.entries()) {
      for (const sql of renameSql(TENANTS[i], t)) await q.query(sql);
      for (const sql of pieceCountFunctionsSql(t)) await q.query(sql);
      // A digit piece has no separator; every pair piece has one.
      await q.query(`DELETE FROM ${pieceCountsTable(t)} WHERE piece ~ '^[[:alnum:]]+$'`);
    }
    await q.query(truncatePieceCountsSql('pair_piece_counts_on_truncate', STUDY_PAIR_PIECE_COUNTS, PATIENT_PAIR_PIECE_COUNTS));
    for (const t of PAIRS) {
      for (const sql of pieceCountTriggersSql(t, 'pair_piece_counts_on_truncate')) await q.query(sql);
    }
    await q.query(rebuildPieceCountsSql([STUDY_PIECE_COUNTS, PATIENT_PIECE_COUNTS, ...PAIRS], true));
    await q.query(`DROP FUNCTION search_tenant_piece(text)`);
    await q.query(`DROP FUNCTION search_tenant_pieces(text)`);
    await q.query(`DROP FUNCTION search_digit_pieces(text)`);
  }
}
