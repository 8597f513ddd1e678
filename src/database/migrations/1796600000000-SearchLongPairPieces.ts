import { MigrationInterface, QueryRunner } from 'typeorm';
import {
  recountTenantPiecesSql,
  wordPiecesFunctionSql,
  searchPieceFunctionSql,
  searchTenantPiecesSql,
} from '../migration-sql/piece-count-triggers';
import { PAIR_PIECE_SHAPES } from './1796400000000-SearchPairPieces';

/**
 * Exact totals, without a heap visit per match, for the fragments people type across two words that
 * the pair pieces (SearchPairPieces) left to be counted through the search index. In the tenant
 * admin's first-search stream at 1,000,000 studies, fragments no piece count held took 6.7 of 10.8 s
 * of the first statements' execution, and 41 of its 44 statements over 20 ms ("das graç" 4,678
 * matches, "reira sant" 1,162, "a de fatima " 5,275, which stays counted): their total visits every
 * match, about 1.5 us each in memory, and it grows with the clinic (bench/README.md, "Twelfth
 * round"). search_long_pair_pieces() lists the new shapes:
 * - a word's last 3 or more characters, one separator, the next word's first 3 or more ("reira
 *   sant", "das grac"): the pieces between these and the pair pieces' 1-2 characters on one side;
 * - a word's end, one separator, the next word whole, a separator ("a oliveira ", "es silva ");
 * - a separator, a word whole, one separator, the next word's start (" fernandes s").
 * As for the pair pieces: separators as SearchEdgePieces reads them (never U+001F, a field's end; a
 * run of exactly one character between the two words, the first character of an outer run), and a
 * piece of 5 or more characters with a digit is not kept. No piece of these shapes is a pair piece
 * (those end in a letter or digit after 1-2 or start with one, or are a word between separators)
 * or a digit piece (no separator), so search_tenant_pieces() adds them to the others, as it adds
 * the digit pieces. The largest clinic at 1,000,000 studies (17,693 distinct pairs of adjacent
 * words) has 317,786 distinct pieces of the first shape. Same tables, triggers and recount as the
 * pair pieces (study_tenant_piece_counts, patient_tenant_piece_counts).
 */
const SEARCH_LONG_PAIR_PIECES = wordPiecesFunctionSql(
  'search_long_pair_pieces',
  ['word text', 'following text', 'before text', 'after text', 'beyond text'],
  `
          FOR k IN 1 .. last - 1 LOOP
            after := runs[k + 1];
            CONTINUE WHEN length(after) <> 1 OR after = chr(31);
            word := words[k];
            following := words[k + 1];
            before := right(runs[k], 1);
            beyond := left(runs[k + 2], 1);
            -- Each loop makes its piece longer on one side: once it holds a digit past 4 characters
            -- (search_pair_piece's rule), so do the rest.
            FOR a IN 3 .. length(word) LOOP
              FOR n IN 3 .. length(following) LOOP
                piece := right(word, a) || after || left(following, n);
                EXIT WHEN length(piece) > 4 AND piece ~ '[[:digit:]]';
                pieces := pieces || piece;
              END LOOP;
            END LOOP;
            -- The next word whole and the separator after it, after any end of this one.
            IF beyond NOT IN ('', chr(31)) THEN
              FOR a IN 1 .. length(word) LOOP
                piece := right(word, a) || after || following || beyond;
                EXIT WHEN length(piece) > 4 AND piece ~ '[[:digit:]]';
                pieces := pieces || piece;
              END LOOP;
            END IF;
            -- This word whole after its separator, then any start of the next one.
            IF before NOT IN ('', chr(31)) THEN
              FOR n IN 1 .. length(following) LOOP
                piece := before || word || after || left(following, n);
                EXIT WHEN length(piece) > 4 AND piece ~ '[[:digit:]]';
                pieces := pieces || piece;
              END LOOP;
            END IF;
          END LOOP;`,
);

// The pair pieces' shapes and the three above, as a fragment is typed: 3 or more characters each
// side of one separator; letters and digits, one separator, a word, a separator; a separator, a
// word, one separator, letters and digits.
export const LONG_PAIR_PIECE_SHAPES =
  '[[:alnum:]]{3,}[^[:alnum:]][[:alnum:]]{3,}|[[:alnum:]]+[^[:alnum:]][[:alnum:]]+[^[:alnum:]]|[^[:alnum:]][[:alnum:]]+[^[:alnum:]][[:alnum:]]+';

export class SearchLongPairPieces1796600000000 implements MigrationInterface {
  name = 'SearchLongPairPieces1796600000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(SEARCH_LONG_PAIR_PIECES);
    await q.query(searchTenantPiecesSql(['search_pair_pieces', 'search_long_pair_pieces', 'search_digit_pieces']));
    await q.query(searchPieceFunctionSql('search_pair_piece', `${PAIR_PIECE_SHAPES}|${LONG_PAIR_PIECE_SHAPES}`, true));
    for (const sql of recountTenantPiecesSql()) await q.query(sql);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(searchTenantPiecesSql(['search_pair_pieces', 'search_digit_pieces']));
    await q.query(`DROP FUNCTION search_long_pair_pieces(text)`);
    await q.query(searchPieceFunctionSql('search_pair_piece', PAIR_PIECE_SHAPES, true));
    for (const sql of recountTenantPiecesSql()) await q.query(sql);
  }
}
