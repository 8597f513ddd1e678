import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What the paginated lists and their search stand on (docs/search.md). The live result is
 * schema.sql at the repository's root.
 *
 * Search:
 * - `search_fold(text)`: lower case without accents (unaccent), so "joao" finds "JOÃO". A wrapper
 *   declared IMMUTABLE with the dictionary named, as unaccent() itself is only STABLE and could not
 *   be used in a stored column. PL/pgSQL, as search_pattern: a custom plan calls them while it is
 *   planned, and a SQL function that is not inlined plans its body again on every call.
 * - `search_pattern(fragment)`: the LIKE pattern of a typed fragment, folded first and escaped
 *   after, so that a character the folding turns into `%`, `_` or `\` (fullwidth `％`) stays literal.
 * - `search_text`: the folded patient name, patient id and accession number (studies), or name and
 *   id (patients), joined by U+001F: a stored generated column, so every writer fills it.
 * - `search_lexemes(tenant_id, search_text)`: the index terms, each prefixed with its clinic's key
 *   (the first 8 hex digits of the tenant id), so that a clinic's search reads its own terms only:
 *   with the clinic as a separate index column, every candidate of a prefix across all clinics was
 *   intersected with the clinic's posting tree ('tonio':* in the largest clinic at 1,000,000
 *   studies: 9.6 ms for 28,000 candidates, against 2.1 ms for its own 5,600). Of every word (runs of
 *   letters and digits), every suffix of 3+ characters, so a fragment inside a word is a prefix of
 *   one of them ("rigue" of "rodrigues"); and of every two adjacent words of one field, every suffix
 *   of the first (down to its last letter) with the whole second word, so a fragment spanning a
 *   word break is one selective term ("zende azevedo", "a fernande") instead of two common ones
 *   intersected ("fernande" alone has 2.4 times the candidates of "a fernande"; "gome" 47 times
 *   those of "el gome").
 * - `search_terms(fragment)`: the terms a fragment must have, or NULL when it has no piece of 3+
 *   characters (then the search walks the list order or tests the scope's rows);
 *   `search_query(tenants, fragment)` those terms in each of the given clinics, one query each.
 * - One GIN index per table on the terms. A trigram index was measured first: its common trigrams
 *   (Brazilian names) cost 3-12 ms of PostgreSQL CPU per search at 1,000,000 studies and three
 *   times that at 3,000,000. Rows the index finds are candidates; `search_text LIKE
 *   search_pattern(...)` decides.
 *
 * Lists:
 * - `study_counts` (per tenant and unit) and `patient_counts` (per tenant), kept by statement
 *   triggers: an unfiltered list's total is the sum of the scope's counter rows. Every change that
 *   can alter a filtered count (a study added, removed or moved; its patient, name, id, accession
 *   number or report status changed; a patient added, removed or renamed) sets the touched row's
 *   `version` from one sequence, so a filtered count kept under the scope's version sum is never
 *   stale (ListTotals). rebuild_list_counts() recounts after a bulk load with triggers off.
 * - The order indexes carry `search_text` (and the unit's, the tenant): a search that walks a
 *   scope in list order reads the index alone. studies_report_order_idx serves the report-status
 *   worklist of a clinic or a unit in list order.
 */
export class ListsAndSearch1796900000000 implements MigrationInterface {
  name = 'ListsAndSearch1796900000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE EXTENSION IF NOT EXISTS unaccent`);
    await q.query(`
      CREATE FUNCTION search_fold(value text) RETURNS text
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
        AS $$ BEGIN RETURN lower(public.unaccent('public.unaccent'::regdictionary, value)); END $$`);
    await q.query(`
      CREATE FUNCTION search_pattern(fragment text) RETURNS text
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
        AS $$ BEGIN RETURN '%' || regexp_replace(public.search_fold(fragment), '([\\\\%_])', '\\\\\\1', 'g') || '%'; END $$`);
    await q.query(`
      CREATE FUNCTION search_lexemes(tenant uuid, folded text) RETURNS tsvector
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
        AS $$
        DECLARE
          key text := left(tenant::text, 8) || ':';
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
                lexemes := lexemes || (key || substr(words[k], i));
              END LOOP;
              CONTINUE WHEN k = array_length(words, 1);
              FOR i IN 1 .. length(words[k]) LOOP
                lexemes := lexemes || (key || substr(words[k], i) || ' ' || words[k + 1]);
              END LOOP;
            END LOOP;
          END LOOP;
          RETURN array_to_tsvector(lexemes);
        END
        $$`);
    // Pieces are split as search_lexemes splits words. A fragment without a break is inside one
    // word: any word with a suffix starting with it. Otherwise the first piece ends a word (it is
    // one of its suffixes, whole), the middle ones are whole words and the last starts a word: each
    // adjacent pair is a term, the last one a prefix (marked with a trailing '*'). Without a pair,
    // the pieces of 3+ characters are the terms; a fragment with neither is left to LIKE.
    await q.query(`
      CREATE FUNCTION search_terms(fragment text) RETURNS text[]
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
        AS $$
        DECLARE
          pieces text[] := regexp_split_to_array(search_fold(fragment), '[^[:alnum:]]+');
          last int := array_length(pieces, 1);
          terms text[] := '{}';
          k int;
        BEGIN
          FOR k IN 1 .. last - 1 LOOP
            CONTINUE WHEN pieces[k] = '' OR pieces[k + 1] = '';
            terms := terms || (pieces[k] || ' ' || pieces[k + 1] || CASE WHEN k + 1 = last THEN '*' ELSE '' END);
          END LOOP;
          IF cardinality(terms) = 0 THEN
            FOR k IN 1 .. last LOOP
              CONTINUE WHEN length(pieces[k]) < 3;
              terms := terms || (pieces[k] || CASE WHEN k = last THEN '*' ELSE '' END);
            END LOOP;
          END IF;
          IF cardinality(terms) = 0 THEN RETURN NULL; END IF;
          RETURN terms;
        END
        $$`);
    // One query per clinic, for `@@ ANY(...)`: a bitmap scan runs one index scan per element, so
    // a search of every clinic reads each clinic's terms once (one tsquery OR-ing them all was
    // tested against every clinic's terms for every candidate: 'zanetti' over 101 clinics, 5.5 ms
    // of index scan against 1.6 ms).
    await q.query(`
      CREATE FUNCTION search_query(tenants uuid[], fragment text) RETURNS tsquery[]
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
        AS $$
        DECLARE
          terms text[] := search_terms(fragment);
          tenant uuid;
          term text;
          own text[];
          queries tsquery[] := '{}';
        BEGIN
          IF terms IS NULL THEN RETURN NULL; END IF;
          FOREACH tenant IN ARRAY tenants LOOP
            own := '{}';
            FOREACH term IN ARRAY terms LOOP
              own := own || CASE WHEN right(term, 1) = '*'
                THEN quote_literal(left(tenant::text, 8) || ':' || left(term, -1)) || ':*'
                ELSE quote_literal(left(tenant::text, 8) || ':' || term) END;
            END LOOP;
            queries := queries || array_to_string(own, ' & ')::tsquery;
          END LOOP;
          RETURN queries;
        END
        $$`);
    await q.query(`
      ALTER TABLE studies ADD COLUMN search_text text NOT NULL GENERATED ALWAYS AS (
        search_fold(coalesce(patient_name, '')) || chr(31) || search_fold(coalesce(patient_id, '')) || chr(31) ||
        search_fold(coalesce(accession_number, ''))) STORED`);
    await q.query(`
      ALTER TABLE patients ADD COLUMN search_text text NOT NULL GENERATED ALWAYS AS (
        search_fold(coalesce(patient_name, '')) || chr(31) || search_fold(coalesce(patient_id, ''))) STORED`);
    for (const index of [
      'studies_patient_name_trgm',
      'studies_patient_id_trgm',
      'studies_accession_trgm',
      'patients_name_trgm',
      'patients_pid_trgm',
    ]) {
      await q.query(`DROP INDEX ${index}`);
    }
    // No pending list: a search would scan it linearly, and an insert would merge it at random.
    await q.query(`
      CREATE INDEX studies_search_idx ON studies
        USING gin (search_lexemes(tenant_id, search_text)) WITH (fastupdate = off)`);
    await q.query(`
      CREATE INDEX patients_search_idx ON patients
        USING gin (search_lexemes(tenant_id, search_text)) WITH (fastupdate = off)`);

    const studyOrder = 'study_date DESC, created_at DESC, id DESC';
    for (const [name, key, include] of [
      ['studies_order_idx', studyOrder, 'search_text'],
      ['studies_tenant_order_idx', `tenant_id, ${studyOrder}`, 'search_text'],
      ['studies_unit_order_idx', `unit_id, ${studyOrder}`, 'tenant_id, search_text'],
      ['patients_order_idx', 'patient_name, created_at DESC, id', 'search_text'],
      ['patients_tenant_order_idx', 'tenant_id, patient_name, created_at DESC, id', 'search_text'],
    ]) {
      await q.query(`DROP INDEX ${name}`);
      await q.query(
        `CREATE INDEX ${name} ON ${name.startsWith('studies') ? 'studies' : 'patients'} (${key}) INCLUDE (${include})`,
      );
    }
    await q.query(
      `CREATE INDEX studies_report_order_idx ON studies (tenant_id, report_status, ${studyOrder}) INCLUDE (unit_id)`,
    );
    // A unit user's patients are those with a study in the unit: answered from this index alone.
    await q.query(`CREATE INDEX studies_unit_patient_idx ON studies (unit_id, patient_uuid) INCLUDE (tenant_id)`);
    // A unit implies its tenant: without this, `tenant_id = $1 AND unit_id = $2` is underestimated.
    await q.query(`CREATE STATISTICS studies_tenant_unit_stats (dependencies) ON tenant_id, unit_id FROM studies`);

    await q.query(`CREATE SEQUENCE list_counts_version`);
    await q.query(`
      CREATE TABLE study_counts (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        unit_id uuid NOT NULL REFERENCES units(id) ON DELETE CASCADE,
        studies bigint NOT NULL,
        version bigint NOT NULL,
        PRIMARY KEY (tenant_id, unit_id)
      )`);
    await q.query(`
      CREATE TABLE patient_counts (
        tenant_id uuid PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
        patients bigint NOT NULL,
        version bigint NOT NULL
      )`);
    // Rows are upserted in key order, so two statements touching the same counters lock them in
    // the same order.
    for (const [event, rows, sign] of [
      ['insert', 'new_rows', ''],
      ['delete', 'old_rows', '-'],
    ]) {
      await q.query(`
        CREATE FUNCTION study_counts_on_${event}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          INSERT INTO study_counts AS c (tenant_id, unit_id, studies, version)
          SELECT tenant_id, unit_id, ${sign}count(*), nextval('list_counts_version')
            FROM ${rows} GROUP BY tenant_id, unit_id ORDER BY tenant_id, unit_id
          ON CONFLICT (tenant_id, unit_id) DO UPDATE
            SET studies = c.studies + EXCLUDED.studies, version = EXCLUDED.version;
          RETURN NULL;
        END $$`);
      await q.query(`
        CREATE FUNCTION patient_counts_on_${event}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          INSERT INTO patient_counts AS c (tenant_id, patients, version)
          SELECT tenant_id, ${sign}count(*), nextval('list_counts_version')
            FROM ${rows} GROUP BY tenant_id ORDER BY tenant_id
          ON CONFLICT (tenant_id) DO UPDATE
            SET patients = c.patients + EXCLUDED.patients, version = EXCLUDED.version;
          RETURN NULL;
        END $$`);
    }
    // Counts follow a study that moves; the version also moves when what a filtered count reads
    // changes. Other updates (modalities, the worker's refresh) take no counter lock.
    await q.query(`
      CREATE FUNCTION study_counts_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO study_counts AS c (tenant_id, unit_id, studies, version)
        SELECT tenant_id, unit_id, sum(delta), nextval('list_counts_version')
          FROM (
            SELECT o.tenant_id, o.unit_id, CASE WHEN (o.tenant_id, o.unit_id) IS DISTINCT FROM (n.tenant_id, n.unit_id) THEN -1 ELSE 0 END
              FROM old_rows o JOIN new_rows n ON n.id = o.id
             WHERE (o.tenant_id, o.unit_id, o.patient_uuid, o.patient_name, o.patient_id, o.accession_number, o.report_status)
                   IS DISTINCT FROM (n.tenant_id, n.unit_id, n.patient_uuid, n.patient_name, n.patient_id, n.accession_number, n.report_status)
            UNION ALL
            SELECT n.tenant_id, n.unit_id, 1
              FROM old_rows o JOIN new_rows n ON n.id = o.id
             WHERE (o.tenant_id, o.unit_id) IS DISTINCT FROM (n.tenant_id, n.unit_id)
          ) d (tenant_id, unit_id, delta)
         GROUP BY tenant_id, unit_id ORDER BY tenant_id, unit_id
        ON CONFLICT (tenant_id, unit_id) DO UPDATE
          SET studies = c.studies + EXCLUDED.studies, version = EXCLUDED.version;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE FUNCTION patient_counts_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO patient_counts AS c (tenant_id, patients, version)
        SELECT tenant_id, sum(delta), nextval('list_counts_version')
          FROM (
            SELECT o.tenant_id, CASE WHEN o.tenant_id IS DISTINCT FROM n.tenant_id THEN -1 ELSE 0 END
              FROM old_rows o JOIN new_rows n ON n.id = o.id
             WHERE (o.tenant_id, o.patient_name, o.patient_id) IS DISTINCT FROM (n.tenant_id, n.patient_name, n.patient_id)
            UNION ALL
            SELECT n.tenant_id, 1
              FROM old_rows o JOIN new_rows n ON n.id = o.id
             WHERE o.tenant_id IS DISTINCT FROM n.tenant_id
          ) d (tenant_id, delta)
         GROUP BY tenant_id ORDER BY tenant_id
        ON CONFLICT (tenant_id) DO UPDATE
          SET patients = c.patients + EXCLUDED.patients, version = EXCLUDED.version;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE FUNCTION list_counts_on_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_TABLE_NAME = 'studies' THEN
          UPDATE study_counts SET studies = 0, version = nextval('list_counts_version');
        ELSE
          UPDATE patient_counts SET patients = 0, version = nextval('list_counts_version');
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE FUNCTION rebuild_list_counts() RETURNS void LANGUAGE plpgsql AS $$
      BEGIN
        -- Writers wait while the recount runs, so the result is exact.
        LOCK TABLE studies, patients IN SHARE MODE;
        DELETE FROM study_counts;
        INSERT INTO study_counts (tenant_id, unit_id, studies, version)
        SELECT tenant_id, unit_id, count(*), nextval('list_counts_version') FROM studies GROUP BY tenant_id, unit_id;
        DELETE FROM patient_counts;
        INSERT INTO patient_counts (tenant_id, patients, version)
        SELECT tenant_id, count(*), nextval('list_counts_version') FROM patients GROUP BY tenant_id;
      END $$`);
    for (const [table, counts] of [
      ['studies', 'study_counts'],
      ['patients', 'patient_counts'],
    ]) {
      await q.query(`CREATE TRIGGER ${table}_counts_insert AFTER INSERT ON ${table}
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${counts}_on_insert()`);
      await q.query(`CREATE TRIGGER ${table}_counts_delete AFTER DELETE ON ${table}
        REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ${counts}_on_delete()`);
      await q.query(`CREATE TRIGGER ${table}_counts_update AFTER UPDATE ON ${table}
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${counts}_on_update()`);
      await q.query(`CREATE TRIGGER ${table}_counts_truncate AFTER TRUNCATE ON ${table}
        FOR EACH STATEMENT EXECUTE FUNCTION list_counts_on_truncate()`);
    }
    await q.query(`SELECT rebuild_list_counts()`);
    await q.query(`ANALYZE studies`);
    await q.query(`ANALYZE patients`);
  }

  public async down(q: QueryRunner): Promise<void> {
    for (const table of ['studies', 'patients']) {
      for (const event of ['insert', 'delete', 'update', 'truncate'])
        await q.query(`DROP TRIGGER ${table}_counts_${event} ON ${table}`);
    }
    await q.query(`DROP FUNCTION rebuild_list_counts(), list_counts_on_truncate()`);
    for (const table of ['study', 'patient']) {
      for (const event of ['insert', 'delete', 'update']) await q.query(`DROP FUNCTION ${table}_counts_on_${event}()`);
    }
    await q.query(`DROP TABLE patient_counts, study_counts`);
    await q.query(`DROP SEQUENCE list_counts_version`);
    await q.query(`DROP STATISTICS studies_tenant_unit_stats`);
    await q.query(`DROP INDEX studies_unit_patient_idx, studies_report_order_idx, studies_search_idx, patients_search_idx`);
    const studyOrder = 'study_date DESC, created_at DESC, id DESC';
    for (const [name, key] of [
      ['studies_order_idx', studyOrder],
      ['studies_tenant_order_idx', `tenant_id, ${studyOrder}`],
      ['studies_unit_order_idx', `unit_id, ${studyOrder}`],
      ['patients_order_idx', 'patient_name, created_at DESC, id'],
      ['patients_tenant_order_idx', 'tenant_id, patient_name, created_at DESC, id'],
    ]) {
      await q.query(`DROP INDEX ${name}`);
      await q.query(`CREATE INDEX ${name} ON ${name.startsWith('studies') ? 'studies' : 'patients'} (${key})`);
    }
    await q.query(`ALTER TABLE patients DROP COLUMN search_text`);
    await q.query(`ALTER TABLE studies DROP COLUMN search_text`);
    for (const [name, table, column] of [
      ['studies_patient_name_trgm', 'studies', 'patient_name'],
      ['studies_patient_id_trgm', 'studies', 'patient_id'],
      ['studies_accession_trgm', 'studies', 'accession_number'],
      ['patients_name_trgm', 'patients', 'patient_name'],
      ['patients_pid_trgm', 'patients', 'patient_id'],
    ]) {
      await q.query(`CREATE INDEX ${name} ON ${table} USING gin (${column} gin_trgm_ops)`);
    }
    await q.query(
      `DROP FUNCTION search_query(uuid[], text), search_terms(text), search_lexemes(uuid, text), search_pattern(text), search_fold(text)`,
    );
  }
}
