import { MigrationInterface, QueryRunner } from 'typeorm';
import {
  recountTenantPiecesSql,
  searchPieceFunctionSql,
  searchTenantPiecesSql,
  wordPiecesFunctionSql,
} from '../migration-sql/piece-count-triggers';
import { PAIR_PIECE_SHAPES } from './1796400000000-SearchPairPieces';
import { LONG_PAIR_PIECE_SHAPES } from './1796600000000-SearchLongPairPieces';

/**
 * Exact totals, without a heap visit per match, for fragments across three words whose middle one
 * has 1-3 characters: a name's particles, "maria de fatima", "joao da silva", "souza e lima". After
 * SearchLongPairPieces they were the slowest first searches of the tenant admin's stream, counted
 * through the search index a heap visit per match, and the matches grow with the clinic: at
 * 3,000,000 studies "a de fati" took 247 ms, "a de fatima " 171, "ria de fat" 151, "a do ca" 84
 * (bench/README.md, "Twelfth round"). search_particle_pieces() lists, for each three adjacent words
 * whose middle one has 1-3 characters and whose separators are one character each:
 * - any end of the first word, the middle word, any start of the third ("a de fati", "ria do c");
 * - any end of the first word, the middle word, the third word whole and the separator after it
 *   ("a de fatima ");
 * - the separator before the first word, the first word whole, the middle word, any start of the
 *   third (" maria de f"), or the third whole and the separator after it.
 * Separators as SearchEdgePieces reads them (never U+001F, a field's end), and a piece with a digit
 * is not kept (every one has 5 or more characters: search_pair_piece's rule). None of them has the
 * shape of another tenant piece (those hold at most two runs of letters and digits), so
 * search_tenant_pieces() adds them to the others. Three words with a longer word between stay
 * counted through the index: their pieces would be every clinic's sequences of three names, where a
 * particle between two words is the few that make these fragments common. In the bench's seed, one
 * study in about 14 has such a sequence (a woman's middle name "de Fátima", "das Graças", "de
 * Lourdes", "do Carmo"), about 40 pieces each. Same tables, triggers and recount as the pair pieces.
 */
const SEARCH_PARTICLE_PIECES = wordPiecesFunctionSql(
  'search_particle_pieces',
  ['first text', 'middle text', 'third text', 'before text', 'whole text', 'head text'],
  `
          FOR k IN 1 .. last - 2 LOOP
            middle := words[k + 1];
            CONTINUE WHEN length(middle) > 3 OR middle ~ '[[:digit:]]'
              OR length(runs[k + 1]) <> 1 OR runs[k + 1] = chr(31)
              OR length(runs[k + 2]) <> 1 OR runs[k + 2] = chr(31);
            first := words[k];
            third := words[k + 2];
            middle := runs[k + 1] || middle || runs[k + 2];
            before := right(runs[k], 1);
            -- The third word whole with the separator after it, when it has one (and no digit).
            whole := left(runs[k + 3], 1);
            whole := CASE WHEN whole NOT IN ('', chr(31)) AND third !~ '[[:digit:]]' THEN third || whole END;
            -- The heads: every end of the first word, then the first word whole after its separator.
            -- Each is longer than the last: once one holds a digit, so do the rest.
            FOR a IN 1 .. length(first) + 1 LOOP
              IF a <= length(first) THEN
                head := right(first, a);
              ELSE
                EXIT WHEN before IN ('', chr(31));
                head := before || first;
              END IF;
              EXIT WHEN head ~ '[[:digit:]]';
              head := head || middle;
              FOR n IN 1 .. length(third) LOOP
                piece := head || left(third, n);
                EXIT WHEN piece ~ '[[:digit:]]';
                pieces := pieces || piece;
              END LOOP;
              IF whole IS NOT NULL THEN
                pieces := pieces || (head || whole);
              END IF;
            END LOOP;
          END LOOP;`,
);

// The shapes above, as a fragment is typed: letters and digits (or a separator and a word), one
// separator, 1-3 letters, one separator, letters and digits (and a separator).
const PARTICLE_PIECE_SHAPES = '[^[:alnum:]]?[[:alnum:]]+[^[:alnum:]][[:alnum:]]{1,3}[^[:alnum:]][[:alnum:]]+[^[:alnum:]]?';

const WITHOUT = ['search_pair_pieces', 'search_long_pair_pieces', 'search_digit_pieces'];
const WITH = ['search_pair_pieces', 'search_long_pair_pieces', 'search_particle_pieces', 'search_digit_pieces'];

export class SearchParticlePieces1796700000000 implements MigrationInterface {
  name = 'SearchParticlePieces1796700000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(SEARCH_PARTICLE_PIECES);
    await q.query(searchTenantPiecesSql(WITH));
    await q.query(
      searchPieceFunctionSql(
        'search_pair_piece',
        `${PAIR_PIECE_SHAPES}|${LONG_PAIR_PIECE_SHAPES}|${PARTICLE_PIECE_SHAPES}`,
        true,
      ),
    );
    for (const sql of recountTenantPiecesSql()) await q.query(sql);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(searchTenantPiecesSql(WITHOUT));
    await q.query(`DROP FUNCTION search_particle_pieces(text)`);
    await q.query(searchPieceFunctionSql('search_pair_piece', `${PAIR_PIECE_SHAPES}|${LONG_PAIR_PIECE_SHAPES}`, true));
    for (const sql of recountTenantPiecesSql()) await q.query(sql);
  }
}
