import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Search that scales with what the user typed (bench/README.md, "Search").
 *
 * - `search_fold(text)`: lower case without accents (the unaccent extension), so "joao" finds
 *   "JOÃO". A wrapper declared IMMUTABLE with the dictionary named, as unaccent() itself is only
 *   STABLE (it reads its dictionary by search_path) and could not be used in a stored column.
 * - `search_text`: the folded patient name, patient id and accession number (studies) or name and
 *   id (patients), joined by U+001F, a character no one types: a stored generated column, so every
 *   writer (ingestion, the seed, a backfill here) fills it without knowing about it.
 * - `search_lexemes(search_text)`: the index terms. Of every word (runs of letters and digits),
 *   every suffix of 3+ characters, so a fragment inside a word is a prefix of one of them ("rigue"
 *   of "rodrigues": 'rigue':*); and of every two adjacent words of one field, each such suffix of
 *   the first (or the whole first word, however short) with the whole second word, so a fragment
 *   spanning a word break is one selective term ("zende azevedo": 'zende azevedo':*) instead of
 *   two common ones intersected.
 * - `search_query(fragment)`: the terms a fragment must have, or NULL when it has no piece of 3+
 *   characters (then the search reads rows in list order: see listSearchSql).
 * - A GIN index on (tenant_id, unit_id, search_lexemes(search_text)) (btree_gin): the scope and the
 *   terms are intersected inside the index. It replaces the per-column trigram indexes, whose
 *   frequent trigrams in Brazilian names made a rare name cost a tenth of a second.
 * The index terms are only candidates; the exact match is `search_text LIKE` the folded pattern.
 */
export class SearchWords1795600000000 implements MigrationInterface {
  name = 'SearchWords1795600000000';

  private readonly trigramIndexes = [
    { table: 'studies', column: 'patient_name', name: 'studies_tenant_patient_name_trgm' },
    { table: 'studies', column: 'patient_id', name: 'studies_tenant_patient_id_trgm' },
    { table: 'studies', column: 'accession_number', name: 'studies_tenant_accession_trgm' },
    { table: 'patients', column: 'patient_name', name: 'patients_tenant_name_trgm' },
    { table: 'patients', column: 'patient_id', name: 'patients_tenant_pid_trgm' },
  ];

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE EXTENSION IF NOT EXISTS unaccent`);
    await q.query(`
      CREATE FUNCTION search_fold(value text) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
        AS $$ SELECT lower(public.unaccent('public.unaccent'::regdictionary, value)) $$`);
    await q.query(`
      CREATE FUNCTION search_lexemes(folded text) RETURNS tsvector
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
              FOR i IN 1 .. greatest(length(words[k]) - 2, 1) LOOP
                lexemes := lexemes || (substr(words[k], i) || ' ' || words[k + 1]);
              END LOOP;
            END LOOP;
          END LOOP;
          RETURN array_to_tsvector(lexemes);
        END
        $$`);
    // Pieces are split as search_lexemes splits words. A fragment without a break is inside one
    // word: any word with a suffix starting with it. Otherwise the first piece ends a word (it is
    // one of its suffixes, whole), the middle ones are whole words and the last starts a word: each
    // adjacent pair is a term, the last one a prefix. Pieces too short to be a term are left to LIKE.
    await q.query(`
      CREATE FUNCTION search_query(fragment text) RETURNS tsquery
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
            CONTINUE WHEN pieces[k] = '' OR pieces[k + 1] = '' OR (k = 1 AND length(pieces[1]) < 3);
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
        $$`);
    await q.query(`
      ALTER TABLE studies ADD COLUMN search_text text NOT NULL GENERATED ALWAYS AS (
        search_fold(coalesce(patient_name, '')) || chr(31) || search_fold(coalesce(patient_id, '')) || chr(31) ||
        search_fold(coalesce(accession_number, ''))) STORED`);
    await q.query(`
      ALTER TABLE patients ADD COLUMN search_text text NOT NULL GENERATED ALWAYS AS (
        search_fold(coalesce(patient_name, '')) || chr(31) || search_fold(coalesce(patient_id, ''))) STORED`);
    // No pending list (see ListQueryPlans): entries go straight into the index.
    await q.query(`
      CREATE INDEX studies_search_idx ON studies
        USING gin (tenant_id, unit_id, search_lexemes(search_text)) WITH (fastupdate = off)`);
    await q.query(`
      CREATE INDEX patients_search_idx ON patients
        USING gin (tenant_id, search_lexemes(search_text)) WITH (fastupdate = off)`);
    for (const index of this.trigramIndexes) await q.query(`DROP INDEX ${index.name}`);
    await q.query(`ANALYZE studies`);
    await q.query(`ANALYZE patients`);
  }

  public async down(q: QueryRunner): Promise<void> {
    for (const index of this.trigramIndexes) {
      await q.query(
        `CREATE INDEX ${index.name} ON ${index.table} USING gin (tenant_id, ${index.column} gin_trgm_ops) WITH (fastupdate = off)`,
      );
    }
    await q.query(`DROP INDEX patients_search_idx`);
    await q.query(`DROP INDEX studies_search_idx`);
    await q.query(`ALTER TABLE patients DROP COLUMN search_text`);
    await q.query(`ALTER TABLE studies DROP COLUMN search_text`);
    await q.query(`DROP FUNCTION search_query(text)`);
    await q.query(`DROP FUNCTION search_lexemes(text)`);
    await q.query(`DROP FUNCTION search_fold(text)`);
    // unaccent stays: another object may have come to use it.
  }
}
