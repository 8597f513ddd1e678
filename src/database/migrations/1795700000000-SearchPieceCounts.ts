import { MigrationInterface, QueryRunner } from 'typeorm';
import { rebuildListCountsSql } from '../migration-sql/list-counter-triggers';
import {
  dropPieceCountTriggersSql,
  PATIENT_PIECE_COUNTS,
  pieceCountFunctionsSql,
  rebuildPieceCountsSql,
  STUDY_PIECE_COUNTS,
  pieceCountTriggerSetSql,
} from '../migration-sql/piece-count-triggers';

/**
 * Exact search totals without visiting a row per match (bench/README.md, "Search totals").
 *
 * A fragment typed without a break ("rigue", "ilva", "0006") matches a record exactly when it is a
 * substring of one of the record's words (runs of letters and digits, as search_lexemes splits
 * them): `search_text LIKE '%rigue%'` cannot match across a separator when the fragment has none.
 * So the number of records of a scope that match it is the number of records that have it among the
 * distinct substrings of their words: a count kept per (piece, tenant, unit) answers the total
 * with an index-only read of one row per unit, where the search index had to visit a heap block per
 * match (PostgreSQL 15 has no index-only bitmap count).
 *
 * - `search_pieces(search_text)`: the distinct pieces of a record: every substring of 3 or 4
 *   characters of every word, and every longer one that holds no digit. Ids and accession numbers
 *   (digits, nearly unique) would otherwise add tens of unique pieces per record; a fragment of 5+
 *   characters with a digit in it matches few records and keeps the search index's count.
 * - `search_piece(fragment)`: the folded fragment when it is such a piece, else NULL (then the
 *   total is counted through the search index, as before).
 * - `study_piece_counts (piece, tenant_id, unit_id, studies)` and `patient_piece_counts (piece,
 *   tenant_id, patients)`, kept by statement-level triggers with transition tables as study_counts
 *   and patient_counts are (ListCounters): one upsert per statement and per key touched, keys in
 *   order so concurrent writers lock them in the same order. They change in the same statements
 *   as those counters, whose version bumps (any change of a name, id, accession number, unit or
 *   tenant) keep ListTotals' kept totals exact. Rows that fall to zero stay (a later record with
 *   the piece reuses them); rebuild_list_counts() drops them.
 * - The primary key INCLUDEs the count, so a sum over a scope is an index-only scan.
 * No foreign keys: a row-level check per upserted piece would cost more than the upsert, and a
 * deleted tenant or unit deletes its studies, whose trigger brings the counts to zero.
 */

/**
 * The pieces of one word (`word`, `len`) appended to `pieces`: every substring of 3 or 4
 * characters, and every longer one without a digit (SearchEdgePieces keeps the same rule).
 */
export const PIECES_INSIDE_WORD = `            digits := word ~ '[[:digit:]]';
            FOR i IN 1 .. len - 2 LOOP
              FOR n IN 3 .. len - i + 1 LOOP
                piece := substr(word, i, n);
                EXIT WHEN digits AND n > 4 AND piece ~ '[[:digit:]]';
                pieces := pieces || piece;
              END LOOP;
            END LOOP;`;

/**
 * search_pieces() and search_piece() as this migration created them, exported for the down() of
 * the migration that widens them (SearchEdgePieces) to restore exactly.
 *
 * A loop, not a query: a set-returning query over regexp_split_to_table and generate_series is
 * estimated at millions of rows, and JIT then compiled it on every call (1 s each). A piece of 5+
 * characters with a digit ends the longer pieces from that start (they hold it too).
 */
export const SEARCH_PIECES_BY_WORD = `
      CREATE OR REPLACE FUNCTION search_pieces(folded text) RETURNS text[]
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
        AS $$
        DECLARE
          word text;
          piece text;
          pieces text[] := '{}';
          len int;
          digits boolean;
        BEGIN
          FOREACH word IN ARRAY regexp_split_to_array(folded, '[^[:alnum:]]+') LOOP
            len := length(word);
            CONTINUE WHEN len < 3;
${PIECES_INSIDE_WORD}
          END LOOP;
          RETURN ARRAY(SELECT DISTINCT unnest(pieces));
        END
        $$`;
export const SEARCH_PIECE_BY_WORD = `
      CREATE OR REPLACE FUNCTION search_piece(fragment text) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
        AS $$
        SELECT CASE WHEN search_fold(fragment) ~ '^[[:alnum:]]{3,}$'
                     AND (length(search_fold(fragment)) <= 4 OR search_fold(fragment) !~ '[[:digit:]]')
                    THEN search_fold(fragment) END
        $$`;

const PIECE_COUNTS = [STUDY_PIECE_COUNTS, PATIENT_PIECE_COUNTS];

export class SearchPieceCounts1795700000000 implements MigrationInterface {
  name = 'SearchPieceCounts1795700000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(SEARCH_PIECES_BY_WORD);
    await q.query(SEARCH_PIECE_BY_WORD);

    await q.query(`
      CREATE TABLE study_piece_counts (
        piece text NOT NULL,
        tenant_id uuid NOT NULL,
        unit_id uuid NOT NULL,
        studies integer NOT NULL,
        PRIMARY KEY (piece, tenant_id, unit_id) INCLUDE (studies)
      )`);
    await q.query(`
      CREATE TABLE patient_piece_counts (
        piece text NOT NULL,
        tenant_id uuid NOT NULL,
        patients integer NOT NULL,
        PRIMARY KEY (piece, tenant_id) INCLUDE (patients)
      )`);

    // One function per table and event, kept as list counters are (ListCounters).
    for (const t of PIECE_COUNTS) {
      for (const sql of pieceCountFunctionsSql(t)) await q.query(sql);
    }
    for (const sql of pieceCountTriggerSetSql(STUDY_PIECE_COUNTS, PATIENT_PIECE_COUNTS)) await q.query(sql);

    await q.query(rebuildPieceCountsSql(PIECE_COUNTS));
    // rebuild_list_counts() (ListCounters), which bulk loads call after loading with triggers off,
    // now recounts the pieces too.
    await q.query(rebuildListCountsSql(['rebuild_search_piece_counts']));
    await q.query(`SELECT rebuild_search_piece_counts()`);
    await q.query(`ANALYZE study_piece_counts`);
    await q.query(`ANALYZE patient_piece_counts`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(rebuildListCountsSql([]));
    await q.query(`DROP FUNCTION rebuild_search_piece_counts()`);
    for (const t of PIECE_COUNTS) {
      for (const sql of dropPieceCountTriggersSql(t)) await q.query(sql);
    }
    await q.query(`DROP FUNCTION piece_counts_on_truncate()`);
    await q.query(`DROP TABLE patient_piece_counts`);
    await q.query(`DROP TABLE study_piece_counts`);
    await q.query(`DROP FUNCTION search_piece(text)`);
    await q.query(`DROP FUNCTION search_pieces(text)`);
  }
}
