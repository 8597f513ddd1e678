import { MigrationInterface, QueryRunner } from 'typeorm';
import { searchPieceFunctionSql } from '../migration-sql/piece-count-triggers';
import { SEARCH_PIECE_AT_EDGES } from './1795900000000-SearchEdgePieces';

/**
 * The functions a search applies to the typed fragment (search_fold, search_piece,
 * search_tenant_query) become PL/pgSQL, with the same bodies and results. As SQL functions they are
 * never inlined (search_fold calls unaccent(), which is only STABLE; search_piece's CASE is not
 * strict), so each call ran the SQL-function executor, which plans the body again for every call:
 * search_piece('567') took 0.22-0.30 ms, against 0.025 ms for the same body in PL/pgSQL, which keeps
 * its plans for the session. A search statement calls them while it is planned (a custom plan folds
 * them into constants: search_piece twice in a count, so 0.6 ms of its 0.7-1.6 ms of planning) or
 * run (a generic plan). Measured at 1,000,000 studies: bench/README.md, "Seventh round".
 *
 * search_fold also computes the stored `search_text` columns; their values do not change.
 * search_lexemes and search_pieces were PL/pgSQL already; search_tag and search_tenant_lexemes,
 * which index expressions use, are left as they are.
 */
export class SearchFragmentFunctions1796200000000 implements MigrationInterface {
  name = 'SearchFragmentFunctions1796200000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE OR REPLACE FUNCTION search_fold(value text) RETURNS text
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
        AS $$ BEGIN RETURN lower(public.unaccent('public.unaccent'::regdictionary, value)); END $$`);
    // The piece shapes of SearchEdgePieces: inside a word; a word's end and a separator; a
    // separator and a word's start; 1-2 characters, one separator, 1-2 characters.
    await q.query(
      searchPieceFunctionSql(
        'search_piece',
        '[[:alnum:]]{3,}|[[:alnum:]]{2,}[^[:alnum:]]|[^[:alnum:]][[:alnum:]]{2,}|[[:alnum:]]{1,2}[^[:alnum:]][[:alnum:]]{1,2}',
        true,
      ),
    );
    await q.query(`
      CREATE OR REPLACE FUNCTION search_tenant_query(tenant uuid, fragment text) RETURNS tsquery
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
        AS $$
        BEGIN
          RETURN regexp_replace(search_query(fragment)::text, '''([^'']*)''', '''' || search_tag(tenant) || '\\1''', 'g')::tsquery;
        END
        $$`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE OR REPLACE FUNCTION search_fold(value text) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
        AS $$ SELECT lower(public.unaccent('public.unaccent'::regdictionary, value)) $$`);
    await q.query(SEARCH_PIECE_AT_EDGES);
    await q.query(`
      CREATE OR REPLACE FUNCTION search_tenant_query(tenant uuid, fragment text) RETURNS tsquery
        LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
        AS $$ SELECT regexp_replace(search_query(fragment)::text, '''([^'']*)''', '''' || search_tag(tenant) || '\\1''', 'g')::tsquery $$`);
  }
}
