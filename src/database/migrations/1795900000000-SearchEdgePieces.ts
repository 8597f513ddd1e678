import { MigrationInterface, QueryRunner } from 'typeorm';
import { wordPiecesFunctionSql } from '../migration-sql/piece-count-triggers';
import { PIECES_INSIDE_WORD, SEARCH_PIECE_BY_WORD, SEARCH_PIECES_BY_WORD } from './1795700000000-SearchPieceCounts';

/**
 * Exact totals, without a heap visit per match, for fragments cut at a word's edge
 * (bench/README.md, "Search totals: pieces at a word's edge").
 *
 * SearchPieceCounts keeps a count per piece inside one word; a fragment with a separator in it was
 * counted through the search index, one heap block per match. The dearest of the typed fragments
 * were those cut next to a separator: "lva " (19,931 of the largest clinic's 200,000 studies,
 * 112 ms), " souza" (17,135, 70 ms), " oliv", "antos ", "o s", "as si", " ba", "os ". They hold one
 * separator character, with at most two letters on one side or nothing at all, and such a fragment
 * matches a record exactly when the record has it among these pieces (the folded text split into
 * words, runs of letters and digits, and the runs between them):
 * - a word's end of 2+ characters and the first character of the run after it ("lva ", "os ");
 * - the last character of the run before a word and the word's start of 2+ characters (" oliv");
 * - a word's last 1-2 characters, a run of exactly one character, the next word's first 1-2
 *   characters ("o s", "as si"): a fragment with letters on both sides of its separator spans the
 *   whole run.
 * Never U+001F, the separator of the fields (no one types it; a run holding it is a field's end).
 * The digit rule stays: a piece of 5+ characters with a digit in it is not kept (ids and accession
 * numbers would add nearly unique rows), and search_piece() answers NULL for it.
 * At 1,000,000 studies the largest clinic's rows grow from 685,724 to 976,717 (the edges 99,781,
 * the short pairs 191,212); pairs with a longer side ("a santo", "lva m") would add 2,293,850 more
 * and stay counted through the index (bench/README.md has the costs).
 * The kept counts are rebuilt: writers wait for the rebuild (rebuild_search_piece_counts()).
 */
const SEARCH_PIECES_AT_EDGES = wordPiecesFunctionSql(
  'search_pieces',
  ['word text', 'after text', 'mark text', 'len int', 'digits boolean'],
  `
          FOR k IN 1 .. last LOOP
            word := words[k];
            len := length(word);
${PIECES_INSIDE_WORD}
            after := runs[k + 1];
            mark := left(after, 1);
            IF mark NOT IN ('', chr(31)) THEN
              FOR n IN 2 .. len LOOP
                piece := right(word, n) || mark;
                EXIT WHEN n > 3 AND piece ~ '[[:digit:]]';
                pieces := pieces || piece;
              END LOOP;
            END IF;
            mark := right(runs[k], 1);
            IF mark NOT IN ('', chr(31)) THEN
              FOR n IN 2 .. len LOOP
                piece := mark || left(word, n);
                EXIT WHEN n > 3 AND piece ~ '[[:digit:]]';
                pieces := pieces || piece;
              END LOOP;
            END IF;
            CONTINUE WHEN k = last OR length(after) <> 1 OR after = chr(31);
            FOR a IN 1 .. least(2, len) LOOP
              FOR b IN 1 .. least(2, length(words[k + 1])) LOOP
                piece := right(word, a) || after || left(words[k + 1], b);
                CONTINUE WHEN length(piece) > 4 AND piece ~ '[[:digit:]]';
                pieces := pieces || piece;
              END LOOP;
            END LOOP;
          END LOOP;`,
  true,
);

// The shapes above, as a fragment is typed: inside a word; a word's end and a separator; a
// separator and a word's start; 1-2 characters, one separator, 1-2 characters. Exported for the
// down() of SearchFragmentFunctions, which rewrites it in PL/pgSQL, to restore exactly.
export const SEARCH_PIECE_AT_EDGES = `
      CREATE OR REPLACE FUNCTION search_piece(fragment text) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
        AS $$
        SELECT CASE WHEN search_fold(fragment) ~ '^([[:alnum:]]{3,}|[[:alnum:]]{2,}[^[:alnum:]]|[^[:alnum:]][[:alnum:]]{2,}|[[:alnum:]]{1,2}[^[:alnum:]][[:alnum:]]{1,2})$'
                     AND strpos(search_fold(fragment), chr(31)) = 0
                     AND (length(search_fold(fragment)) <= 4 OR search_fold(fragment) !~ '[[:digit:]]')
                    THEN search_fold(fragment) END
        $$`;

export class SearchEdgePieces1795900000000 implements MigrationInterface {
  name = 'SearchEdgePieces1795900000000';

  public async up(q: QueryRunner): Promise<void> {
    await this.recount(q, SEARCH_PIECES_AT_EDGES, SEARCH_PIECE_AT_EDGES);
  }

  public async down(q: QueryRunner): Promise<void> {
    await this.recount(q, SEARCH_PIECES_BY_WORD, SEARCH_PIECE_BY_WORD);
  }

  /**
   * Replaces both functions and recounts every kept piece with them. Autovacuum then sets the
   * tables' visibility map (after the inserts), until which a sum also reads its heap rows.
   */
  private async recount(q: QueryRunner, pieces: string, piece: string): Promise<void> {
    await q.query(pieces);
    await q.query(piece);
    await q.query(`SELECT rebuild_search_piece_counts()`);
    await q.query(`ANALYZE study_piece_counts`);
    await q.query(`ANALYZE patient_piece_counts`);
  }
}
