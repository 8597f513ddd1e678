import { MigrationInterface, QueryRunner } from 'typeorm';

const SECTION_MAX = 20000;
const SECTIONS = ['indication', 'technique', 'findings', 'impression'];
const STUDY_ORDER = 'study_date DESC, created_at DESC, id DESC';

/**
 * The schema, whole (schema.sql at the repository's root is its pg_dump, checked in CI). What the
 * contract promises is held by the database, so that no code path and no two concurrent requests can
 * break it: case-insensitive uniqueness as unique indexes on lower(...), one draft and one report per
 * study as partial unique indexes, a final report and a kept PDF unchangeable by triggers. Lists and
 * search (the folded text, the search terms per clinic, the order indexes, the list counters and
 * their version): docs/search.md.
 *
 * It keeps the name of the first schema's migration, so a database migrated before the migrations
 * were folded into this one has nothing left to run.
 */
export class InitialSchema1763770000000 implements MigrationInterface {
  name = 'InitialSchema1763770000000';

  public async up(q: QueryRunner): Promise<void> {
    for (const extension of ['pgcrypto', 'unaccent']) await q.query(`CREATE EXTENSION IF NOT EXISTS ${extension}`);
    await this.searchFunctions(q);
    await this.tables(q);
    await this.indexes(q);
    await this.listCounters(q);
    await this.reportGuards(q);
    // Studies from an unknown sender land here; nobody signs in to it.
    await q.query(`
      WITH t AS (INSERT INTO tenants (name, slug, is_active) VALUES ('Quarantine', 'quarantine', false) RETURNING id)
      INSERT INTO units (tenant_id, name, slug, is_active) SELECT id, 'Quarantine', 'quarantine', false FROM t`);
  }

  /**
   * Folding (case and accents, unaccent being only STABLE: a wrapper naming its dictionary), the LIKE
   * pattern of a fragment, and the search terms per clinic. PL/pgSQL: a custom plan calls them while
   * it is planned, and a SQL function that is not inlined plans its body again on every call.
   */
  private async searchFunctions(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION search_fold(value text) RETURNS text
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
        AS $$ BEGIN RETURN lower(public.unaccent('public.unaccent'::regdictionary, value)); END $$`);
    // Folded first and escaped after, so that a character the folding turns into %, _ or \ stays literal.
    await q.query(`
      CREATE FUNCTION search_pattern(fragment text) RETURNS text
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
        AS $$ BEGIN RETURN '%' || regexp_replace(public.search_fold(fragment), '([\\\\%_])', '\\\\\\1', 'g') || '%'; END $$`);
    // Of every word, every suffix of 3+ characters; of every two adjacent words of one field, every
    // suffix of the first with the whole second; each prefixed with the clinic's key, `:` for a word's
    // and `|` for a pair's, so that a fragment within one word reads words only (every pair starting
    // with it repeats a word's suffix: 'tonio':* gathered each study twice).
    await q.query(`
      CREATE FUNCTION search_lexemes(tenant uuid, folded text) RETURNS tsvector
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
        AS $$
        DECLARE
          key text := left(tenant::text, 8);
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
                lexemes := lexemes || (key || ':' || substr(words[k], i));
              END LOOP;
              CONTINUE WHEN k = array_length(words, 1);
              FOR i IN 1 .. length(words[k]) LOOP
                lexemes := lexemes || (key || '|' || substr(words[k], i) || ' ' || words[k + 1]);
              END LOOP;
            END LOOP;
          END LOOP;
          RETURN array_to_tsvector(lexemes);
        END
        $$`);
    // Pieces are split as search_lexemes splits words. Without a break, any word with a suffix starting
    // with the fragment. Otherwise the first piece ends a word, the middle ones are whole words and the
    // last starts a word: each adjacent pair is a term, the last one a prefix (a trailing '*'). Without
    // a pair, the pieces of 3+ characters; with neither, NULL (LIKE alone).
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
    // One query per clinic, for @@ ANY(...): a bitmap scan runs one index scan per element.
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
              -- A pair of pieces (they hold a space) reads pairs; a piece, words.
              own := own || (quote_literal(left(tenant::text, 8) || CASE WHEN position(' ' IN term) > 0 THEN '|' ELSE ':' END
                || rtrim(term, '*')) || CASE WHEN right(term, 1) = '*' THEN ':*' ELSE '' END);
            END LOOP;
            queries := queries || array_to_string(own, ' & ')::tsquery;
          END LOOP;
          RETURN queries;
        END
        $$`);
  }

  private async tables(q: QueryRunner): Promise<void> {
    const stamps = 'created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now()';
    await q.query(`
      CREATE TABLE tenants (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        name varchar(255) NOT NULL,
        slug varchar(255) NOT NULL,
        is_active boolean NOT NULL DEFAULT true,
        logo text NULL,
        ${stamps}
      )`);
    await q.query(`
      CREATE TABLE units (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE RESTRICT,
        name varchar(255) NOT NULL,
        slug varchar(255) NULL,
        is_active boolean NOT NULL DEFAULT true,
        ${stamps}
      )`);
    await q.query(`
      CREATE TABLE users (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        tenant_id uuid NULL REFERENCES tenants(id) ON DELETE RESTRICT,
        unit_id uuid NULL REFERENCES units(id) ON DELETE RESTRICT,
        name varchar(255) NOT NULL,
        email varchar(255) NOT NULL,
        password varchar(255) NOT NULL,
        remember_token varchar(100) NULL,
        is_super_admin boolean NOT NULL DEFAULT false,
        is_tenant_admin boolean NOT NULL DEFAULT false,
        is_active boolean NOT NULL DEFAULT true,
        crm varchar(12) NULL,
        signature text NULL,
        has_signature boolean GENERATED ALWAYS AS (signature IS NOT NULL) STORED,
        ${stamps}
      )`);
    await q.query(`
      CREATE TABLE modalities (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE RESTRICT,
        unit_id uuid NOT NULL REFERENCES units(id) ON DELETE RESTRICT,
        name varchar(255) NOT NULL,
        aet varchar(16) NOT NULL,
        ip_address varchar(45) NOT NULL,
        ${stamps}
      )`);
    // search_text: the folded fields joined by U+001F, a stored generated column, so every writer fills it.
    await q.query(`
      CREATE TABLE patients (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE RESTRICT,
        patient_id varchar(64) NOT NULL,
        patient_name varchar(255) NOT NULL,
        patient_birth_date date NULL,
        patient_sex varchar(1) NULL CHECK (patient_sex IN ('M', 'F')),
        ${stamps},
        search_text text NOT NULL GENERATED ALWAYS AS (
          search_fold(coalesce(patient_name, '')) || chr(31) || search_fold(coalesce(patient_id, ''))) STORED
      )`);
    await q.query(`
      CREATE TABLE studies (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE RESTRICT,
        unit_id uuid NOT NULL REFERENCES units(id) ON DELETE RESTRICT,
        patient_uuid uuid NULL REFERENCES patients(id) ON DELETE SET NULL,
        imgsrv_study_id varchar(64) NOT NULL,
        study_instance_uid text NOT NULL,
        patient_id varchar(64) NOT NULL,
        patient_name varchar(255) NOT NULL,
        patient_birth_date date NULL,
        patient_sex varchar(1) NULL CHECK (patient_sex IN ('M', 'F')),
        accession_number varchar(64) NULL,
        study_date date NOT NULL,
        study_description varchar(255) NULL,
        modalities text[] NULL,
        report_status varchar(16) NULL CHECK (report_status IN ('pending', 'draft', 'final')),
        reported_at timestamptz NULL,
        reported_by_user_id uuid NULL REFERENCES users(id) ON DELETE SET NULL,
        ${stamps},
        search_text text NOT NULL GENERATED ALWAYS AS (
          search_fold(coalesce(patient_name, '')) || chr(31) || search_fold(coalesce(patient_id, '')) || chr(31) ||
          search_fold(coalesce(accession_number, ''))) STORED
      )`);
    // Referenced by imgsrv_study_sync below.
    await q.query(`CREATE UNIQUE INDEX studies_imgsrv_study_id_key ON studies (imgsrv_study_id)`);
    await q.query(`
      CREATE TABLE series (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        study_id uuid NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
        imgsrv_series_id varchar(64) NOT NULL,
        series_instance_uid text NOT NULL,
        modality varchar(16) NOT NULL,
        series_number integer NOT NULL,
        manufacturer varchar(255) NULL,
        instance_count integer NOT NULL DEFAULT 0,
        ${stamps}
      )`);
    await q.query(`
      CREATE TABLE instances (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        series_id uuid NOT NULL REFERENCES series(id) ON DELETE CASCADE,
        imgsrv_instance_id varchar(64) NOT NULL,
        sop_instance_uid text NOT NULL,
        instance_number integer NOT NULL,
        rows integer NULL,
        columns integer NULL,
        slice_thickness double precision NULL,
        ${stamps}
      )`);
    await q.query(`
      CREATE TABLE thumbnails (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        study_id uuid NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
        series_id uuid NULL REFERENCES series(id) ON DELETE CASCADE,
        content_type varchar(64) NOT NULL DEFAULT 'image/jpeg',
        data bytea NOT NULL,
        ${stamps}
      )`);
    await q.query(`
      CREATE TABLE report_templates (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE RESTRICT,
        unit_id uuid NULL REFERENCES units(id) ON DELETE RESTRICT,
        name varchar(255) NOT NULL,
        content text NULL,
        schema_version integer NOT NULL DEFAULT 1,
        layout jsonb NOT NULL DEFAULT '{}'::jsonb,
        page jsonb NOT NULL DEFAULT '{}'::jsonb,
        assets jsonb NOT NULL DEFAULT '{}'::jsonb,
        is_active boolean NOT NULL DEFAULT true,
        ${stamps},
        deleted_at timestamptz NULL
      )`);
    // The image server's change feed: where the last reconciliation stopped, and what each study's
    // sender was (the worker places a study by its AE title and address).
    await q.query(`
      CREATE TABLE imgsrv_sync_state (
        key varchar(64) PRIMARY KEY,
        value text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE imgsrv_study_sync (
        imgsrv_study_id varchar(64) PRIMARY KEY REFERENCES studies(imgsrv_study_id) ON DELETE CASCADE,
        remote_aet varchar(64) NULL,
        indexed_seq bigint NULL,
        last_update varchar(32) NULL,
        indexed_at timestamptz NULL,
        remote_ip varchar(64) NULL
      )`);
    // The access trail (decisions.md 3e): no foreign keys, so that an entry outlives what it names.
    await q.query(`
      CREATE TABLE access_logs (
        id bigserial PRIMARY KEY,
        occurred_at timestamptz NOT NULL,
        action varchar(32) NOT NULL,
        user_id uuid NULL,
        tenant_id uuid NULL,
        study_id uuid NULL,
        target_id uuid NULL,
        ip varchar(64) NULL,
        request_id varchar(128) NULL,
        share_id uuid NULL,
        patient_id varchar(64) NULL,
        result_count integer NULL
      )`);
    await q.query(`
      CREATE TABLE reports (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        study_id uuid NOT NULL REFERENCES studies(id) ON DELETE RESTRICT,
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE RESTRICT,
        unit_id uuid NOT NULL REFERENCES units(id) ON DELETE RESTRICT,
        kind varchar(16) NOT NULL CHECK (kind IN ('report', 'addendum')),
        amends_id uuid NULL REFERENCES reports(id) ON DELETE RESTRICT,
        status varchar(16) NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'final')),
        ${SECTIONS.map((s) => `${s} text NULL CHECK (char_length(${s}) <= ${SECTION_MAX})`).join(',\n        ')},
        template_id uuid NULL REFERENCES report_templates(id) ON DELETE RESTRICT,
        version integer NOT NULL DEFAULT 1,
        author_id uuid NOT NULL REFERENCES users(id) ON DELETE RESTRICT,
        signed_by_id uuid NULL REFERENCES users(id) ON DELETE RESTRICT,
        signed_by_name varchar(255) NULL,
        signed_by_crm varchar(12) NULL,
        signed_at timestamptz NULL,
        signed_layout jsonb NULL,
        ${stamps},
        CONSTRAINT reports_addendum_amends CHECK ((kind = 'addendum') = (amends_id IS NOT NULL)),
        CONSTRAINT reports_final_signed CHECK (
          (status = 'final') = (signed_at IS NOT NULL AND signed_by_id IS NOT NULL AND signed_layout IS NOT NULL))
      )`);
    await q.query(`
      CREATE TABLE report_pdfs (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        report_id uuid NOT NULL REFERENCES reports(id) ON DELETE RESTRICT,
        version integer NOT NULL,
        signing_id uuid NOT NULL UNIQUE REFERENCES reports(id) ON DELETE RESTRICT,
        data bytea NOT NULL,
        sop_instance_uid varchar(64) NULL,
        filed_instance_id varchar(64) NULL,
        filed_at timestamptz NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT report_pdfs_version_key UNIQUE (report_id, version)
      )`);
    await q.query(`
      CREATE TABLE report_presets (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE RESTRICT,
        unit_id uuid NULL REFERENCES units(id) ON DELETE RESTRICT,
        name varchar(255) NOT NULL,
        modality varchar(16) NULL,
        ${SECTIONS.map((s) => `${s} text NULL`).join(',\n        ')},
        ${stamps},
        deleted_at timestamptz NULL
      )`);
    await q.query(`
      CREATE TABLE shares (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE RESTRICT,
        study_id uuid NOT NULL REFERENCES studies (id) ON DELETE CASCADE,
        token_hash char(64) NOT NULL,
        passcode_hash varchar(255) NULL,
        expires_at timestamptz NOT NULL,
        max_uses integer NOT NULL CHECK (max_uses BETWEEN 1 AND 1000),
        uses integer NOT NULL DEFAULT 0 CHECK (uses >= 0 AND uses <= max_uses),
        last_used_at timestamptz NULL,
        revoked_at timestamptz NULL,
        note varchar(255) NULL,
        created_by_user_id uuid NULL REFERENCES users (id) ON DELETE SET NULL,
        ${stamps}
      )`);
    // An uploaded study's unit, until its indexing places it there.
    await q.query(`
      CREATE TABLE upload_placements (
        study_instance_uid varchar(64) PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        unit_id uuid NOT NULL REFERENCES units (id) ON DELETE CASCADE,
        uploaded_by_user_id uuid NULL REFERENCES users (id) ON DELETE SET NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  private async indexes(q: QueryRunner): Promise<void> {
    for (const index of [
      'UNIQUE INDEX tenants_name_lower_key ON tenants (lower(name))',
      'UNIQUE INDEX tenants_slug_key ON tenants (slug)',
      'UNIQUE INDEX units_tenant_name_lower_key ON units (tenant_id, lower(name))',
      'UNIQUE INDEX units_slug_key ON units (slug) WHERE slug IS NOT NULL',
      'INDEX units_tenant_name_idx ON units (tenant_id, name, id)',
      'UNIQUE INDEX users_email_lower_key ON users (lower(email))',
      'INDEX users_tenant_unit_idx ON users (tenant_id, unit_id)',
      'INDEX users_unit_idx ON users (unit_id)',
      'UNIQUE INDEX modalities_aet_key ON modalities (aet)',
      'UNIQUE INDEX modalities_unit_name_lower_key ON modalities (unit_id, lower(name))',
      'INDEX modalities_tenant_idx ON modalities (tenant_id)',
      'UNIQUE INDEX patients_tenant_patient_id_key ON patients (tenant_id, patient_id)',
      // The order indexes carry search_text: a walk of a scope in list order reads them alone.
      'INDEX patients_order_idx ON patients (patient_name, created_at DESC, id) INCLUDE (search_text)',
      'INDEX patients_tenant_order_idx ON patients (tenant_id, patient_name, created_at DESC, id) INCLUDE (search_text)',
      // No pending list: a search would scan it linearly, and an insert would merge it at random.
      'INDEX patients_search_idx ON patients USING gin (search_lexemes(tenant_id, search_text)) WITH (fastupdate = off)',
      'INDEX studies_uid_idx ON studies (study_instance_uid)',
      `INDEX studies_order_idx ON studies (${STUDY_ORDER}) INCLUDE (search_text)`,
      `INDEX studies_tenant_order_idx ON studies (tenant_id, ${STUDY_ORDER}) INCLUDE (search_text)`,
      `INDEX studies_unit_order_idx ON studies (unit_id, ${STUDY_ORDER}) INCLUDE (tenant_id, search_text)`,
      `INDEX studies_patient_order_idx ON studies (patient_uuid, ${STUDY_ORDER})`,
      // The reporting worklist of a clinic or a unit, in list order.
      `INDEX studies_report_order_idx ON studies (tenant_id, report_status, ${STUDY_ORDER}) INCLUDE (unit_id)`,
      // A unit user's patients are those with a study in the unit: answered from this index alone.
      'INDEX studies_unit_patient_idx ON studies (unit_id, patient_uuid) INCLUDE (tenant_id)',
      'INDEX studies_search_idx ON studies USING gin (search_lexemes(tenant_id, search_text)) WITH (fastupdate = off)',
      'UNIQUE INDEX series_imgsrv_series_id_key ON series (imgsrv_series_id)',
      'INDEX series_study_order_idx ON series (study_id, series_number, created_at, id)',
      'UNIQUE INDEX instances_imgsrv_instance_id_key ON instances (imgsrv_instance_id)',
      'INDEX instances_series_order_idx ON instances (series_id, instance_number, created_at, id)',
      'UNIQUE INDEX thumbnails_study_key ON thumbnails (study_id) WHERE series_id IS NULL',
      'UNIQUE INDEX thumbnails_series_key ON thumbnails (series_id) WHERE series_id IS NOT NULL',
      'INDEX report_templates_tenant_unit_idx ON report_templates (tenant_id, unit_id) WHERE deleted_at IS NULL',
      // At most one active template per unit, and one active global template per clinic.
      `UNIQUE INDEX report_templates_one_active_per_unit ON report_templates (unit_id)
         WHERE is_active AND deleted_at IS NULL AND unit_id IS NOT NULL`,
      `UNIQUE INDEX report_templates_one_active_global ON report_templates (tenant_id)
         WHERE is_active AND deleted_at IS NULL AND unit_id IS NULL`,
      'INDEX imgsrv_study_sync_remote_aet_idx ON imgsrv_study_sync (remote_aet)',
      'INDEX access_logs_tenant_time_idx ON access_logs (tenant_id, occurred_at DESC)',
      'INDEX access_logs_study_time_idx ON access_logs (study_id, occurred_at DESC)',
      'INDEX access_logs_user_time_idx ON access_logs (user_id, occurred_at DESC)',
      `INDEX access_logs_tenant_patient_time_idx ON access_logs (tenant_id, patient_id, occurred_at DESC)
         WHERE patient_id IS NOT NULL`,
      'INDEX reports_study_idx ON reports (study_id, created_at, id)',
      "UNIQUE INDEX reports_one_draft_per_study ON reports (study_id) WHERE status = 'draft'",
      "UNIQUE INDEX reports_one_report_per_study ON reports (study_id) WHERE kind = 'report'",
      'INDEX report_presets_tenant_name_idx ON report_presets (tenant_id, name, id) WHERE deleted_at IS NULL',
      'UNIQUE INDEX shares_token_hash_key ON shares (token_hash)',
      'INDEX shares_study_created_idx ON shares (study_id, created_at)',
    ]) {
      await q.query(`CREATE ${index}`);
    }
    // A unit implies its tenant: without this, `tenant_id = $1 AND unit_id = $2` is underestimated.
    await q.query(`CREATE STATISTICS studies_tenant_unit_stats (dependencies) ON tenant_id, unit_id FROM studies`);
  }

  /**
   * study_counts (per unit) and patient_counts (per tenant), kept by statement triggers: an
   * unfiltered list's total is the sum of the scope's counter rows. Every change that can alter a
   * filtered count sets the touched row's `version` from one sequence, so a filtered count kept
   * under the scope's version sum is never stale (ListTotals). Rows are upserted in key order, so
   * two statements touching the same counters lock them in the same order. rebuild_list_counts()
   * recounts after a bulk load with the triggers off. The update triggers: ListVersionOnOrder.
   */
  private async listCounters(q: QueryRunner): Promise<void> {
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
      await q.query(`CREATE TRIGGER ${table}_counts_truncate AFTER TRUNCATE ON ${table}
        FOR EACH STATEMENT EXECUTE FUNCTION list_counts_on_truncate()`);
    }
  }

  /** A final report never changes and is never deleted; a kept PDF's bytes never change. */
  private async reportGuards(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION reports_final_unchanged() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'report % is final and cannot change', OLD.id USING ERRCODE = 'P0001', HINT = 'final-report';
      END $$`);
    await q.query(`
      CREATE TRIGGER reports_final_unchanged BEFORE UPDATE OR DELETE ON reports
        FOR EACH ROW WHEN (OLD.status = 'final') EXECUTE FUNCTION reports_final_unchanged()`);
    await q.query(`
      CREATE FUNCTION report_pdfs_kept() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' OR NEW.data IS DISTINCT FROM OLD.data OR NEW.report_id IS DISTINCT FROM OLD.report_id
           OR NEW.version IS DISTINCT FROM OLD.version OR NEW.signing_id IS DISTINCT FROM OLD.signing_id THEN
          RAISE EXCEPTION 'a signed report PDF is kept as it was signed' USING ERRCODE = 'P0001';
        END IF;
        RETURN NEW;
      END $$`);
    await q.query(
      `CREATE TRIGGER report_pdfs_kept BEFORE UPDATE OR DELETE ON report_pdfs FOR EACH ROW EXECUTE FUNCTION report_pdfs_kept()`,
    );
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TABLE study_counts, patient_counts, upload_placements, shares, report_presets, report_pdfs, reports,
        access_logs, imgsrv_study_sync, imgsrv_sync_state, report_templates, thumbnails, instances, series,
        studies, patients, modalities, users, units, tenants`);
    await q.query(`DROP SEQUENCE list_counts_version`);
    await q.query(`
      DROP FUNCTION rebuild_list_counts(), list_counts_on_truncate(), study_counts_on_insert(), study_counts_on_delete(),
        patient_counts_on_insert(), patient_counts_on_delete(), reports_final_unchanged(), report_pdfs_kept(), search_query(uuid[], text), search_terms(text),
        search_lexemes(uuid, text), search_pattern(text), search_fold(text)`);
  }
}
