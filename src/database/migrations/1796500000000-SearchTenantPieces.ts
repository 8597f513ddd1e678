import { MigrationInterface, QueryRunner } from 'typeorm';
import {
  dropPieceCountTriggersSql,
  PATIENT_PAIR_PIECE_COUNTS,
  PATIENT_PIECE_COUNTS,
  PATIENT_TENANT_PIECE_COUNTS,
  PieceCountTable,
  pieceCountFunctionsSql,
  pieceCountsTable,
  rebuildPieceCountsSql,
  STUDY_PAIR_PIECE_COUNTS,
  STUDY_PIECE_COUNTS,
  STUDY_TENANT_PIECE_COUNTS,
  pieceCountTriggerSetSql,
  truncateFunctionName,
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

/**
 * The studies' and patients' tables of `from` renamed to `to`'s, with their primary keys, and kept
 * by `to`'s trigger functions and triggers instead of `from`'s.
 */
async function moveCounts(q: QueryRunner, from: PieceCountTable[], to: PieceCountTable[]): Promise<void> {
  for (const t of from) for (const sql of dropPieceCountTriggersSql(t)) await q.query(sql);
  await q.query(`DROP FUNCTION ${truncateFunctionName(from[0])}()`);
  for (const [i, t] of to.entries()) {
    await q.query(`ALTER TABLE ${pieceCountsTable(from[i])} RENAME TO ${pieceCountsTable(t)}`);
    await q.query(`ALTER INDEX ${pieceCountsTable(from[i])}_pkey RENAME TO ${pieceCountsTable(t)}_pkey`);
    for (const sql of pieceCountFunctionsSql(t)) await q.query(sql);
  }
  for (const sql of pieceCountTriggerSetSql(to[0], to[1])) await q.query(sql);
}

export class SearchTenantPieces1796500000000 implements MigrationInterface {
  name = 'SearchTenantPieces1796500000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(SEARCH_DIGIT_PIECES);
    await q.query(SEARCH_TENANT_PIECES);
    await q.query(SEARCH_TENANT_PIECE);
    // Writers wait until the migration commits, so the counts are exact from the start.
    await q.query(`LOCK TABLE studies, patients IN SHARE MODE`);
    await moveCounts(q, PAIRS, TENANTS);
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
    await moveCounts(q, TENANTS, PAIRS);
    // A digit piece has no separator; every pair piece has one.
    for (const t of PAIRS) await q.query(`DELETE FROM ${pieceCountsTable(t)} WHERE piece ~ '^[[:alnum:]]+$'`);
    await q.query(rebuildPieceCountsSql([STUDY_PIECE_COUNTS, PATIENT_PIECE_COUNTS, ...PAIRS], true));
    await q.query(`DROP FUNCTION search_tenant_piece(text)`);
    await q.query(`DROP FUNCTION search_tenant_pieces(text)`);
    await q.query(`DROP FUNCTION search_digit_pieces(text)`);
  }
}
