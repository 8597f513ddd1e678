import { MigrationInterface, QueryRunner } from 'typeorm';
import {
  dropPieceCountTriggersSql,
  PATIENT_PAIR_PIECE_COUNTS,
  PATIENT_PIECE_COUNTS,
  pieceCountFunctionsSql,
  pieceCountsTable,
  rebuildPieceCountsSql,
  recountPiecesSql,
  STUDY_PAIR_PIECE_COUNTS,
  wordPiecesFunctionSql,
  searchPieceFunctionSql,
  STUDY_PIECE_COUNTS,
  pieceCountTriggerSetSql,
} from '../migration-sql/piece-count-triggers';

/**
 * Exact totals, without a heap visit per match, for three more shapes of typed fragments
 * (bench/README.md, "Ninth round"). Of 3,000 fragments drawn as the bench draws them, counted
 * through the search index at 1,000,000 studies, these took half of the counting time in 9% of the
 * fragments, a heap visit per match:
 * - a word's last 1-2 characters, one separator, the next word's first 3 or more ("a sil",
 *   "o fern": 121 fragments, 9.9 ms each on average, up to 135);
 * - a word's last 3 or more characters, one separator, the next word's first 1-2 ("ilva s": 130,
 *   2.8 ms, up to 44);
 * - a whole word between two separators (" silva ": 54 ms each, 6,842 matches on average).
 * Such a fragment matches a record exactly when the record has it among these pieces, which
 * search_pair_pieces() lists (separators as SearchEdgePieces reads them: never U+001F, a field's
 * end; a run of exactly one character between the two words), and search_pair_piece() names it.
 * The digit rule of the other pieces stays (a piece of 5+ characters with a digit is not kept).
 *
 * Kept per tenant, not per unit: per unit the largest clinic's rows would number about a million
 * (each boundary between two words gives about 20 pieces, and a name's pair of words repeats across
 * units far less than a word does); per tenant they are shared by every unit. A unit user's search
 * walks its unit (at most 10,000 rows, searchCountPlan) or is counted through the search index, as
 * before. New tables with the triggers of SearchPieceCounts (piece-count-triggers.ts), recounted by
 * rebuild_search_piece_counts(), which bulk loads call through rebuild_list_counts().
 */
const SEARCH_PAIR_PIECES = wordPiecesFunctionSql(
  'search_pair_pieces',
  ['word text', 'following text', 'before text', 'after text', 'len int'],
  `
          FOR k IN 1 .. last LOOP
            word := words[k];
            len := length(word);
            before := right(runs[k], 1);
            after := left(runs[k + 1], 1);
            IF before NOT IN ('', chr(31)) AND after NOT IN ('', chr(31)) THEN
              piece := before || word || after;
              IF length(piece) <= 4 OR piece !~ '[[:digit:]]' THEN
                pieces := pieces || piece;
              END IF;
            END IF;
            CONTINUE WHEN k = last OR length(runs[k + 1]) <> 1 OR after = chr(31);
            following := words[k + 1];
            -- Each loop makes its piece longer on one side: once it holds a digit, so do the rest.
            FOR a IN 1 .. least(2, len) LOOP
              FOR n IN 3 .. length(following) LOOP
                piece := right(word, a) || after || left(following, n);
                EXIT WHEN piece ~ '[[:digit:]]';
                pieces := pieces || piece;
              END LOOP;
            END LOOP;
            FOR b IN 1 .. least(2, length(following)) LOOP
              FOR n IN 3 .. len LOOP
                piece := right(word, n) || after || left(following, b);
                EXIT WHEN piece ~ '[[:digit:]]';
                pieces := pieces || piece;
              END LOOP;
            END LOOP;
          END LOOP;`,
);

// The shapes above, as a fragment is typed: 1-2 characters, one separator, 3 or more; 3 or more,
// one separator, 1-2; a separator, a whole word, a separator.
export const PAIR_PIECE_SHAPES =
  '[[:alnum:]]{1,2}[^[:alnum:]][[:alnum:]]{3,}|[[:alnum:]]{3,}[^[:alnum:]][[:alnum:]]{1,2}|[^[:alnum:]][[:alnum:]]+[^[:alnum:]]';
const SEARCH_PAIR_PIECE = searchPieceFunctionSql('search_pair_piece', PAIR_PIECE_SHAPES, false);

const PAIR_PIECE_COUNTS = [STUDY_PAIR_PIECE_COUNTS, PATIENT_PAIR_PIECE_COUNTS];

export class SearchPairPieces1796400000000 implements MigrationInterface {
  name = 'SearchPairPieces1796400000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(SEARCH_PAIR_PIECES);
    await q.query(SEARCH_PAIR_PIECE);
    for (const t of PAIR_PIECE_COUNTS) {
      // The primary key INCLUDEs the count: a sum over a scope is an index-only scan.
      await q.query(`
        CREATE TABLE ${pieceCountsTable(t)} (
          piece text NOT NULL,
          tenant_id uuid NOT NULL,
          ${t.count} integer NOT NULL,
          PRIMARY KEY (piece, tenant_id) INCLUDE (${t.count})
        )`);
      for (const sql of pieceCountFunctionsSql(t)) await q.query(sql);
    }
    for (const sql of pieceCountTriggerSetSql(STUDY_PAIR_PIECE_COUNTS, PATIENT_PAIR_PIECE_COUNTS)) await q.query(sql);
    await q.query(rebuildPieceCountsSql([STUDY_PIECE_COUNTS, PATIENT_PIECE_COUNTS, ...PAIR_PIECE_COUNTS], true));
    // Writers wait until the migration commits, so the first counts are exact.
    await q.query(`LOCK TABLE studies, patients IN SHARE MODE`);
    for (const t of PAIR_PIECE_COUNTS) {
      await q.query(recountPiecesSql(t));
      await q.query(`ANALYZE ${pieceCountsTable(t)}`);
    }
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(rebuildPieceCountsSql([STUDY_PIECE_COUNTS, PATIENT_PIECE_COUNTS], true));
    for (const t of PAIR_PIECE_COUNTS) {
      for (const sql of dropPieceCountTriggersSql(t)) await q.query(sql);
    }
    await q.query(`DROP FUNCTION pair_piece_counts_on_truncate()`);
    for (const t of PAIR_PIECE_COUNTS) await q.query(`DROP TABLE ${pieceCountsTable(t)}`);
    await q.query(`DROP FUNCTION search_pair_piece(text)`);
    await q.query(`DROP FUNCTION search_pair_pieces(text)`);
  }
}
