import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Pair terms for every end of a word, however short (bench/README.md, "Search").
 *
 * SearchWords paired the next word with the first word's suffixes of 3+ characters only, so a
 * fragment that starts with the last one or two letters of a word ("io sil", "e silva", "a nu",
 * "o co") had no pair term: its candidates were every record with the next piece anywhere ("sil":*
 * is 38,124 of the largest clinic's 200,000 studies, for 798 matches), or, with no piece of 3+
 * characters, the whole scope (200,000 rows read to count "a nu"'s 2,166). Each word pair now also
 * gives the first word's last one and two characters with the next word ("o silva", "io silva"),
 * and a fragment's first piece pairs whatever its length: the candidates are the matches, give or
 * take the separator (the terms join words by one space, the exact match decides).
 *
 * Both search indexes are rebuilt in this migration's transaction (their expression's function
 * changed): writers to studies and patients wait for it, about 3 minutes per million studies.
 */
const LEXEMES = (pairFrom: string) => `
  CREATE OR REPLACE FUNCTION search_lexemes(folded text) RETURNS tsvector
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
    AS $$
    DECLARE
      field text;
      words text[];
      lexemes text[] := '{}';
      k int;
      i int;
    BEGIN
      FOREACH field IN ARRAY string_to_array(folded, chr(31)) LOOP
        words := array_remove(regexp_split_to_array(field, '[^[:alnum:]]+'), '');
        FOR k IN 1 .. coalesce(array_length(words, 1), 0) LOOP
          FOR i IN 1 .. length(words[k]) - 2 LOOP
            lexemes := lexemes || substr(words[k], i);
          END LOOP;
          CONTINUE WHEN k = array_length(words, 1);
          FOR i IN 1 .. ${pairFrom} LOOP
            lexemes := lexemes || (substr(words[k], i) || ' ' || words[k + 1]);
          END LOOP;
        END LOOP;
      END LOOP;
      RETURN array_to_tsvector(lexemes);
    END
    $$`;

const QUERY = (skipShortFirst: boolean) => `
  CREATE OR REPLACE FUNCTION search_query(fragment text) RETURNS tsquery
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
    AS $$
    DECLARE
      pieces text[] := regexp_split_to_array(search_fold(fragment), '[^[:alnum:]]+');
      last int := array_length(pieces, 1);
      terms text[] := '{}';
      k int;
    BEGIN
      IF last = 1 THEN
        IF length(pieces[1]) >= 3 THEN RETURN (quote_literal(pieces[1]) || ':*')::tsquery; END IF;
        RETURN NULL;
      END IF;
      FOR k IN 1 .. last - 1 LOOP
        CONTINUE WHEN pieces[k] = '' OR pieces[k + 1] = ''${skipShortFirst ? ' OR (k = 1 AND length(pieces[1]) < 3)' : ''};
        terms := terms || (quote_literal(pieces[k] || ' ' || pieces[k + 1]) || CASE WHEN k + 1 = last THEN ':*' ELSE '' END);
      END LOOP;
      IF cardinality(terms) = 0 THEN
        FOR k IN 1 .. last LOOP
          CONTINUE WHEN length(pieces[k]) < 3;
          terms := terms || (quote_literal(pieces[k]) || CASE WHEN k = last THEN ':*' ELSE '' END);
        END LOOP;
      END IF;
      IF cardinality(terms) = 0 THEN RETURN NULL; END IF;
      RETURN array_to_string(terms, ' & ')::tsquery;
    END
    $$`;

export class SearchShortPairs1795800000000 implements MigrationInterface {
  name = 'SearchShortPairs1795800000000';

  public async up(q: QueryRunner): Promise<void> {
    // Every suffix of the first word, down to its last character.
    await q.query(LEXEMES('length(words[k])'));
    await q.query(QUERY(false));
    await this.rebuild(q);
  }

  public async down(q: QueryRunner): Promise<void> {
    // As SearchWords made them: suffixes of 3+ characters, or the whole word however short.
    await q.query(LEXEMES('greatest(length(words[k]) - 2, 1)'));
    await q.query(QUERY(true));
    await this.rebuild(q);
  }

  private async rebuild(q: QueryRunner): Promise<void> {
    await q.query(`REINDEX INDEX studies_search_idx`);
    await q.query(`REINDEX INDEX patients_search_idx`);
    await q.query(`ANALYZE studies`);
    await q.query(`ANALYZE patients`);
  }
}
