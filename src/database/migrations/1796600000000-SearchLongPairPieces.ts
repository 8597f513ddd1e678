import { MigrationInterface, QueryRunner } from 'typeorm';
import {
  PATIENT_TENANT_PIECE_COUNTS,
  pieceCountsTable,
  recountPiecesSql,
  SPLIT_WORDS_AND_RUNS,
  searchPieceFunctionSql,
  STUDY_TENANT_PIECE_COUNTS,
} from '../migration-sql/piece-count-triggers';
import { SEARCH_PAIR_PIECE, SEARCH_PAIR_PIECES } from './1796400000000-SearchPairPieces';

/**
 * Exact totals, without a heap visit per match, for the fragments people type across two words that
 * the pair pieces (SearchPairPieces) left to be counted through the search index. In the tenant
 * admin's first-search stream at 1,000,000 studies those fragments took 6.7 of 10.8 s of the first
 * statements' execution, and 41 of its 44 statements over 20 ms ("a de fatima " 5,275 matches, "das
 * graç" 4,678, "reira sant" 1,162): their total visits every match, about 1.5 us each in memory, and
 * it grows with the clinic (bench/README.md, "Twelfth round"). The new shapes:
 * - a word's last 3 or more characters, one separator, the next word's first 3 or more ("reira
 *   sant", "das grac"): the pieces between these and the pair pieces' 1-2 characters on one side;
 * - a word's end, one separator, the next word whole, a separator ("a oliveira ", "es silva ");
 * - a separator, a word whole, one separator, the next word's start (" fernandes s").
 * As before: separators as SearchEdgePieces reads them (never U+001F, a field's end; a run of
 * exactly one character between the two words, the first character of an outer run), and a piece of
 * 5 or more characters with a digit is not kept. The largest clinic at 1,000,000 studies (17,693
 * distinct pairs of adjacent words) has 317,786 distinct pieces of the first shape. Same tables,
 * triggers and recount as the pair pieces (study_tenant_piece_counts, patient_tenant_piece_counts).
 */
const SEARCH_LONG_PAIR_PIECES = `
      CREATE OR REPLACE FUNCTION search_pair_pieces(folded text) RETURNS text[]
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
        AS $$
        DECLARE
          words text[] := '{}';
          runs text[] := '{}';
          found text[];
          word text;
          following text;
          before text;
          after text;
          beyond text;
          piece text;
          pieces text[] := '{}';
          last int;
          len int;
        BEGIN
${SPLIT_WORDS_AND_RUNS}
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
            -- Each loop makes its piece longer on one side: once it holds a digit past 4 characters
            -- (search_pair_piece's rule), so do the rest.
            FOR a IN 1 .. len LOOP
              FOR n IN 1 .. length(following) LOOP
                CONTINUE WHEN a <= 2 AND n <= 2;
                piece := right(word, a) || after || left(following, n);
                EXIT WHEN length(piece) > 4 AND piece ~ '[[:digit:]]';
                pieces := pieces || piece;
              END LOOP;
            END LOOP;
            -- The next word whole and the separator after it, after any end of this one.
            beyond := left(runs[k + 2], 1);
            IF beyond NOT IN ('', chr(31)) THEN
              FOR a IN 1 .. len LOOP
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
          END LOOP;
          RETURN ARRAY(SELECT DISTINCT unnest(pieces));
        END
        $$`;

// The pair pieces' shapes and the three above, as a fragment is typed: letters and digits, one
// separator, letters and digits (not 1-2 on both sides: search_piece's, per unit); the same with a
// separator after; a separator, a word, one separator, a word's start; a separator, a word, a separator.
const SEARCH_LONG_PAIR_PIECE = searchPieceFunctionSql(
  'search_pair_piece',
  '[[:alnum:]]{1,2}[^[:alnum:]][[:alnum:]]{3,}|[[:alnum:]]{3,}[^[:alnum:]][[:alnum:]]+|[[:alnum:]]+[^[:alnum:]][[:alnum:]]+[^[:alnum:]]|[^[:alnum:]][[:alnum:]]+[^[:alnum:]][[:alnum:]]+|[^[:alnum:]][[:alnum:]]+[^[:alnum:]]',
  true,
);

const TENANTS = [STUDY_TENANT_PIECE_COUNTS, PATIENT_TENANT_PIECE_COUNTS];

/** The tenant piece tables recounted from scratch with the functions now defined, writers waiting. */
async function recount(q: QueryRunner): Promise<void> {
  await q.query(`LOCK TABLE studies, patients IN SHARE MODE`);
  await q.query(`TRUNCATE ${TENANTS.map(pieceCountsTable).join(', ')}`);
  for (const t of TENANTS) {
    await q.query(recountPiecesSql(t));
    await q.query(`ANALYZE ${pieceCountsTable(t)}`);
  }
}

export class SearchLongPairPieces1796600000000 implements MigrationInterface {
  name = 'SearchLongPairPieces1796600000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(SEARCH_LONG_PAIR_PIECES);
    await q.query(SEARCH_LONG_PAIR_PIECE);
    await recount(q);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(SEARCH_PAIR_PIECES.replace('CREATE FUNCTION', 'CREATE OR REPLACE FUNCTION'));
    await q.query(SEARCH_PAIR_PIECE.replace('CREATE FUNCTION', 'CREATE OR REPLACE FUNCTION'));
    await recount(q);
  }
}
