CREATE EXTENSION IF NOT EXISTS pgcrypto WITH SCHEMA public;

CREATE EXTENSION IF NOT EXISTS unaccent WITH SCHEMA public;

CREATE EXTENSION IF NOT EXISTS "uuid-ossp" WITH SCHEMA public;

CREATE FUNCTION public.list_counts_on_truncate() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
      BEGIN
        IF TG_TABLE_NAME = 'studies' THEN
          UPDATE study_counts SET studies = 0, version = nextval('list_counts_version');
        ELSE
          UPDATE patient_counts SET patients = 0, version = nextval('list_counts_version');
        END IF;
        RETURN NULL;
      END $$;

CREATE FUNCTION public.patient_counts_on_delete() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
        BEGIN
          INSERT INTO patient_counts AS c (tenant_id, patients, version)
          SELECT tenant_id, -count(*), nextval('list_counts_version')
            FROM old_rows GROUP BY tenant_id ORDER BY tenant_id
          ON CONFLICT (tenant_id) DO UPDATE
            SET patients = c.patients + EXCLUDED.patients, version = EXCLUDED.version;
          RETURN NULL;
        END $$;

CREATE FUNCTION public.patient_counts_on_insert() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
        BEGIN
          INSERT INTO patient_counts AS c (tenant_id, patients, version)
          SELECT tenant_id, count(*), nextval('list_counts_version')
            FROM new_rows GROUP BY tenant_id ORDER BY tenant_id
          ON CONFLICT (tenant_id) DO UPDATE
            SET patients = c.patients + EXCLUDED.patients, version = EXCLUDED.version;
          RETURN NULL;
        END $$;

CREATE FUNCTION public.patient_counts_on_update() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
      BEGIN
        INSERT INTO patient_counts AS c (tenant_id, patients, version)
        SELECT tenant_id, sum(delta), nextval('list_counts_version')
          FROM (
            SELECT o.tenant_id, CASE WHEN (o.tenant_id) IS DISTINCT FROM (n.tenant_id) THEN -1 ELSE 0 END
              FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE (o.tenant_id, o.patient_name, o.patient_id, o.created_at) IS DISTINCT FROM (n.tenant_id, n.patient_name, n.patient_id, n.created_at)
            UNION ALL
            SELECT n.tenant_id, 1 FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE (o.tenant_id) IS DISTINCT FROM (n.tenant_id)
          ) d (tenant_id, delta)
         GROUP BY tenant_id ORDER BY tenant_id
        ON CONFLICT (tenant_id) DO UPDATE
          SET patients = c.patients + EXCLUDED.patients, version = EXCLUDED.version;
        RETURN NULL;
      END $$;

CREATE FUNCTION public.rebuild_list_counts() RETURNS void
    LANGUAGE plpgsql
    AS $$
      BEGIN
        -- Writers wait while the recount runs, so the result is exact.
        LOCK TABLE studies, patients IN SHARE MODE;
        DELETE FROM study_counts;
        INSERT INTO study_counts (tenant_id, unit_id, studies, version)
        SELECT tenant_id, unit_id, count(*), nextval('list_counts_version') FROM studies GROUP BY tenant_id, unit_id;
        DELETE FROM patient_counts;
        INSERT INTO patient_counts (tenant_id, patients, version)
        SELECT tenant_id, count(*), nextval('list_counts_version') FROM patients GROUP BY tenant_id;
      END $$;

CREATE FUNCTION public.report_pdfs_kept() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
      BEGIN
        IF TG_OP = 'DELETE' OR NEW.data IS DISTINCT FROM OLD.data OR NEW.report_id IS DISTINCT FROM OLD.report_id
           OR NEW.version IS DISTINCT FROM OLD.version OR NEW.signing_id IS DISTINCT FROM OLD.signing_id THEN
          RAISE EXCEPTION 'a signed report PDF is kept as it was signed' USING ERRCODE = 'P0001';
        END IF;
        RETURN NEW;
      END $$;

CREATE FUNCTION public.reports_final_unchanged() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
      BEGIN
        RAISE EXCEPTION 'report % is final and cannot change', OLD.id USING ERRCODE = 'P0001', HINT = 'final-report';
      END $$;

CREATE FUNCTION public.search_fold(value text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ BEGIN RETURN lower(public.unaccent('public.unaccent'::regdictionary, value)); END $$;

CREATE FUNCTION public.search_lexemes(tenant uuid, folded text) RETURNS tsvector
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
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
        $$;

CREATE FUNCTION public.search_pattern(fragment text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ BEGIN RETURN '%' || regexp_replace(public.search_fold(fragment), '([\\%_])', '\\\1', 'g') || '%'; END $$;

CREATE FUNCTION public.search_query(tenants uuid[], fragment text) RETURNS tsquery[]
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
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
        $$;

CREATE FUNCTION public.search_terms(fragment text) RETURNS text[]
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
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
        $$;

CREATE FUNCTION public.share_use_without_passcode(hash character) RETURNS TABLE(id uuid, tenant_id uuid, study_id uuid, passcode_hash character varying, expires_at timestamp with time zone, max_uses integer, uses integer, revoked_at timestamp with time zone, created_by_user_id uuid, tenant_active boolean, creator_usable boolean, unit_id uuid, study_instance_uid text, patient_name character varying, study_date text, study_description character varying, modalities text[], report_status character varying)
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
      #variable_conflict use_column
      BEGIN
        RETURN QUERY
        UPDATE shares sh SET uses = sh.uses + 1, last_used_at = now()
          FROM studies s, tenants t, users u
         WHERE sh.token_hash = hash AND sh.passcode_hash IS NULL AND sh.uses < sh.max_uses AND sh.revoked_at IS NULL
           AND sh.expires_at > now() AND s.id = sh.study_id AND t.id = sh.tenant_id AND t.is_active
           AND u.id = sh.created_by_user_id AND u.is_active AND (u.is_super_admin OR u.tenant_id = sh.tenant_id)
        RETURNING sh.id, sh.tenant_id, sh.study_id, sh.passcode_hash, sh.expires_at, sh.max_uses, sh.uses, sh.revoked_at,
          sh.created_by_user_id, t.is_active, true, s.unit_id, s.study_instance_uid, s.patient_name, s.study_date::text,
          s.study_description, s.modalities, s.report_status;
      END $$;

CREATE FUNCTION public.study_counts_on_delete() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
        BEGIN
          INSERT INTO study_counts AS c (tenant_id, unit_id, studies, version)
          SELECT tenant_id, unit_id, -count(*), nextval('list_counts_version')
            FROM old_rows GROUP BY tenant_id, unit_id ORDER BY tenant_id, unit_id
          ON CONFLICT (tenant_id, unit_id) DO UPDATE
            SET studies = c.studies + EXCLUDED.studies, version = EXCLUDED.version;
          RETURN NULL;
        END $$;

CREATE FUNCTION public.study_counts_on_insert() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
        BEGIN
          INSERT INTO study_counts AS c (tenant_id, unit_id, studies, version)
          SELECT tenant_id, unit_id, count(*), nextval('list_counts_version')
            FROM new_rows GROUP BY tenant_id, unit_id ORDER BY tenant_id, unit_id
          ON CONFLICT (tenant_id, unit_id) DO UPDATE
            SET studies = c.studies + EXCLUDED.studies, version = EXCLUDED.version;
          RETURN NULL;
        END $$;

CREATE FUNCTION public.study_counts_on_update() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
      BEGIN
        INSERT INTO study_counts AS c (tenant_id, unit_id, studies, version)
        SELECT tenant_id, unit_id, sum(delta), nextval('list_counts_version')
          FROM (
            SELECT o.tenant_id, o.unit_id, CASE WHEN (o.tenant_id, o.unit_id) IS DISTINCT FROM (n.tenant_id, n.unit_id) THEN -1 ELSE 0 END
              FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE (o.tenant_id, o.unit_id, o.patient_uuid, o.patient_name, o.patient_id, o.accession_number, o.report_status, o.study_date, o.created_at) IS DISTINCT FROM (n.tenant_id, n.unit_id, n.patient_uuid, n.patient_name, n.patient_id, n.accession_number, n.report_status, n.study_date, n.created_at)
            UNION ALL
            SELECT n.tenant_id, n.unit_id, 1 FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE (o.tenant_id, o.unit_id) IS DISTINCT FROM (n.tenant_id, n.unit_id)
          ) d (tenant_id, unit_id, delta)
         GROUP BY tenant_id, unit_id ORDER BY tenant_id, unit_id
        ON CONFLICT (tenant_id, unit_id) DO UPDATE
          SET studies = c.studies + EXCLUDED.studies, version = EXCLUDED.version;
        RETURN NULL;
      END $$;

CREATE TABLE public.access_logs (
    id bigint NOT NULL,
    occurred_at timestamp with time zone NOT NULL,
    action character varying(32) NOT NULL,
    user_id uuid,
    tenant_id uuid,
    study_id uuid,
    target_id uuid,
    ip character varying(64),
    request_id character varying(128),
    share_id uuid,
    patient_id character varying(64),
    result_count integer
);

CREATE SEQUENCE public.access_logs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.access_logs_id_seq OWNED BY public.access_logs.id;

CREATE TABLE public.imgsrv_study_sync (
    imgsrv_study_id character varying(64) NOT NULL,
    remote_aet character varying(64),
    indexed_seq bigint,
    last_update character varying(32),
    indexed_at timestamp with time zone,
    remote_ip character varying(64)
);

CREATE TABLE public.imgsrv_sync_state (
    key character varying(64) NOT NULL,
    value text NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.instances (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    series_id uuid NOT NULL,
    imgsrv_instance_id character varying(64) NOT NULL,
    sop_instance_uid text NOT NULL,
    instance_number integer NOT NULL,
    rows integer,
    columns integer,
    slice_thickness double precision,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE SEQUENCE public.list_counts_version
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

CREATE TABLE public.migrations (
    id integer NOT NULL,
    "timestamp" bigint NOT NULL,
    name character varying NOT NULL
);

CREATE SEQUENCE public.migrations_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.migrations_id_seq OWNED BY public.migrations.id;

CREATE TABLE public.modalities (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    tenant_id uuid NOT NULL,
    unit_id uuid NOT NULL,
    name character varying(255) NOT NULL,
    aet character varying(16) NOT NULL,
    ip_address character varying(45) NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.patient_counts (
    tenant_id uuid NOT NULL,
    patients bigint NOT NULL,
    version bigint NOT NULL
);

CREATE TABLE public.patients (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    tenant_id uuid NOT NULL,
    patient_id character varying(64) NOT NULL,
    patient_name character varying(255) NOT NULL,
    patient_birth_date date,
    patient_sex character varying(1),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    search_text text GENERATED ALWAYS AS (((public.search_fold((COALESCE(patient_name, ''::character varying))::text) || chr(31)) || public.search_fold((COALESCE(patient_id, ''::character varying))::text))) STORED NOT NULL,
    CONSTRAINT patients_patient_sex_check CHECK (((patient_sex)::text = ANY ((ARRAY['M'::character varying, 'F'::character varying])::text[])))
);

CREATE TABLE public.report_pdfs (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    report_id uuid NOT NULL,
    version integer NOT NULL,
    signing_id uuid NOT NULL,
    data bytea NOT NULL,
    sop_instance_uid character varying(64),
    filed_instance_id character varying(64),
    filed_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.report_presets (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    tenant_id uuid NOT NULL,
    unit_id uuid,
    name character varying(255) NOT NULL,
    modality character varying(16),
    indication text,
    technique text,
    findings text,
    impression text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    deleted_at timestamp with time zone
);

CREATE TABLE public.report_templates (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    tenant_id uuid NOT NULL,
    unit_id uuid,
    name character varying(255) NOT NULL,
    content text,
    schema_version integer DEFAULT 1 NOT NULL,
    layout jsonb DEFAULT '{}'::jsonb NOT NULL,
    page jsonb DEFAULT '{}'::jsonb NOT NULL,
    assets jsonb DEFAULT '{}'::jsonb NOT NULL,
    is_active boolean DEFAULT true NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    deleted_at timestamp with time zone
);

CREATE TABLE public.reports (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    study_id uuid NOT NULL,
    tenant_id uuid NOT NULL,
    unit_id uuid NOT NULL,
    kind character varying(16) NOT NULL,
    amends_id uuid,
    status character varying(16) DEFAULT 'draft'::character varying NOT NULL,
    indication text,
    technique text,
    findings text,
    impression text,
    template_id uuid,
    version integer DEFAULT 1 NOT NULL,
    author_id uuid NOT NULL,
    signed_by_id uuid,
    signed_by_name character varying(255),
    signed_by_crm character varying(12),
    signed_at timestamp with time zone,
    signed_layout jsonb,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT reports_addendum_amends CHECK ((((kind)::text = 'addendum'::text) = (amends_id IS NOT NULL))),
    CONSTRAINT reports_final_signed CHECK ((((status)::text = 'final'::text) = ((signed_at IS NOT NULL) AND (signed_by_id IS NOT NULL) AND (signed_layout IS NOT NULL)))),
    CONSTRAINT reports_findings_check CHECK ((char_length(findings) <= 20000)),
    CONSTRAINT reports_impression_check CHECK ((char_length(impression) <= 20000)),
    CONSTRAINT reports_indication_check CHECK ((char_length(indication) <= 20000)),
    CONSTRAINT reports_kind_check CHECK (((kind)::text = ANY ((ARRAY['report'::character varying, 'addendum'::character varying])::text[]))),
    CONSTRAINT reports_status_check CHECK (((status)::text = ANY ((ARRAY['draft'::character varying, 'final'::character varying])::text[]))),
    CONSTRAINT reports_technique_check CHECK ((char_length(technique) <= 20000))
);

CREATE TABLE public.series (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    study_id uuid NOT NULL,
    imgsrv_series_id character varying(64) NOT NULL,
    series_instance_uid text NOT NULL,
    modality character varying(16) NOT NULL,
    series_number integer NOT NULL,
    manufacturer character varying(255),
    instance_count integer DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.shares (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    tenant_id uuid NOT NULL,
    study_id uuid NOT NULL,
    token_hash character(64) NOT NULL,
    passcode_hash character varying(255),
    expires_at timestamp with time zone NOT NULL,
    max_uses integer NOT NULL,
    uses integer DEFAULT 0 NOT NULL,
    last_used_at timestamp with time zone,
    revoked_at timestamp with time zone,
    note character varying(255),
    created_by_user_id uuid,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT shares_check CHECK (((uses >= 0) AND (uses <= max_uses))),
    CONSTRAINT shares_max_uses_check CHECK (((max_uses >= 1) AND (max_uses <= 1000)))
);

CREATE TABLE public.studies (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    tenant_id uuid NOT NULL,
    unit_id uuid NOT NULL,
    patient_uuid uuid,
    imgsrv_study_id character varying(64) NOT NULL,
    study_instance_uid text NOT NULL,
    patient_id character varying(64) NOT NULL,
    patient_name character varying(255) NOT NULL,
    patient_birth_date date,
    patient_sex character varying(1),
    accession_number character varying(64),
    study_date date NOT NULL,
    study_description character varying(255),
    modalities text[],
    report_status character varying(16),
    reported_at timestamp with time zone,
    reported_by_user_id uuid,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    search_text text GENERATED ALWAYS AS (((((public.search_fold((COALESCE(patient_name, ''::character varying))::text) || chr(31)) || public.search_fold((COALESCE(patient_id, ''::character varying))::text)) || chr(31)) || public.search_fold((COALESCE(accession_number, ''::character varying))::text))) STORED NOT NULL,
    CONSTRAINT studies_patient_sex_check CHECK (((patient_sex)::text = ANY ((ARRAY['M'::character varying, 'F'::character varying])::text[]))),
    CONSTRAINT studies_report_status_check CHECK (((report_status)::text = ANY ((ARRAY['pending'::character varying, 'draft'::character varying, 'final'::character varying])::text[])))
);

CREATE TABLE public.study_counts (
    tenant_id uuid NOT NULL,
    unit_id uuid NOT NULL,
    studies bigint NOT NULL,
    version bigint NOT NULL
);

CREATE TABLE public.tenants (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    name character varying(255) NOT NULL,
    slug character varying(255) NOT NULL,
    is_active boolean DEFAULT true NOT NULL,
    logo text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.thumbnails (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    study_id uuid NOT NULL,
    series_id uuid,
    content_type character varying(64) DEFAULT 'image/jpeg'::character varying NOT NULL,
    data bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.typeorm_metadata (
    type character varying NOT NULL,
    database character varying,
    schema character varying,
    "table" character varying,
    name character varying,
    value text
);

CREATE TABLE public.units (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    tenant_id uuid NOT NULL,
    name character varying(255) NOT NULL,
    slug character varying(255),
    is_active boolean DEFAULT true NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.upload_placements (
    study_instance_uid character varying(64) NOT NULL,
    tenant_id uuid NOT NULL,
    unit_id uuid NOT NULL,
    uploaded_by_user_id uuid,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.users (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    tenant_id uuid,
    unit_id uuid,
    name character varying(255) NOT NULL,
    email character varying(255) NOT NULL,
    password character varying(255) NOT NULL,
    remember_token character varying(100),
    is_super_admin boolean DEFAULT false NOT NULL,
    is_tenant_admin boolean DEFAULT false NOT NULL,
    is_active boolean DEFAULT true NOT NULL,
    crm character varying(12),
    signature text,
    has_signature boolean GENERATED ALWAYS AS ((signature IS NOT NULL)) STORED,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY public.access_logs ALTER COLUMN id SET DEFAULT nextval('public.access_logs_id_seq'::regclass);

ALTER TABLE ONLY public.migrations ALTER COLUMN id SET DEFAULT nextval('public.migrations_id_seq'::regclass);

ALTER TABLE ONLY public.migrations
    ADD CONSTRAINT "PK_8c82d7f526340ab734260ea46be" PRIMARY KEY (id);

ALTER TABLE ONLY public.access_logs
    ADD CONSTRAINT access_logs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.imgsrv_study_sync
    ADD CONSTRAINT imgsrv_study_sync_pkey PRIMARY KEY (imgsrv_study_id);

ALTER TABLE ONLY public.imgsrv_sync_state
    ADD CONSTRAINT imgsrv_sync_state_pkey PRIMARY KEY (key);

ALTER TABLE ONLY public.instances
    ADD CONSTRAINT instances_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.modalities
    ADD CONSTRAINT modalities_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.patient_counts
    ADD CONSTRAINT patient_counts_pkey PRIMARY KEY (tenant_id);

ALTER TABLE ONLY public.patients
    ADD CONSTRAINT patients_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.report_pdfs
    ADD CONSTRAINT report_pdfs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.report_pdfs
    ADD CONSTRAINT report_pdfs_signing_id_key UNIQUE (signing_id);

ALTER TABLE ONLY public.report_pdfs
    ADD CONSTRAINT report_pdfs_version_key UNIQUE (report_id, version);

ALTER TABLE ONLY public.report_presets
    ADD CONSTRAINT report_presets_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.report_templates
    ADD CONSTRAINT report_templates_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.reports
    ADD CONSTRAINT reports_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.series
    ADD CONSTRAINT series_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.shares
    ADD CONSTRAINT shares_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.studies
    ADD CONSTRAINT studies_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.study_counts
    ADD CONSTRAINT study_counts_pkey PRIMARY KEY (tenant_id, unit_id);

ALTER TABLE ONLY public.tenants
    ADD CONSTRAINT tenants_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.thumbnails
    ADD CONSTRAINT thumbnails_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.units
    ADD CONSTRAINT units_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.upload_placements
    ADD CONSTRAINT upload_placements_pkey PRIMARY KEY (study_instance_uid);

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_pkey PRIMARY KEY (id);

CREATE INDEX access_logs_study_time_idx ON public.access_logs USING btree (study_id, occurred_at DESC);

CREATE INDEX access_logs_tenant_patient_time_idx ON public.access_logs USING btree (tenant_id, patient_id, occurred_at DESC) WHERE (patient_id IS NOT NULL);

CREATE INDEX access_logs_tenant_time_idx ON public.access_logs USING btree (tenant_id, occurred_at DESC);

CREATE INDEX access_logs_user_time_idx ON public.access_logs USING btree (user_id, occurred_at DESC);

CREATE INDEX imgsrv_study_sync_remote_aet_idx ON public.imgsrv_study_sync USING btree (remote_aet);

CREATE UNIQUE INDEX instances_imgsrv_instance_id_key ON public.instances USING btree (imgsrv_instance_id);

CREATE INDEX instances_series_order_idx ON public.instances USING btree (series_id, instance_number, created_at, id);

CREATE UNIQUE INDEX modalities_aet_key ON public.modalities USING btree (aet);

CREATE INDEX modalities_tenant_idx ON public.modalities USING btree (tenant_id);

CREATE UNIQUE INDEX modalities_unit_name_lower_key ON public.modalities USING btree (unit_id, lower((name)::text));

CREATE INDEX patients_order_idx ON public.patients USING btree (patient_name, created_at DESC, id) INCLUDE (search_text);

CREATE INDEX patients_search_idx ON public.patients USING gin (public.search_lexemes(tenant_id, search_text)) WITH (fastupdate=off);

CREATE INDEX patients_tenant_order_idx ON public.patients USING btree (tenant_id, patient_name, created_at DESC, id) INCLUDE (search_text);

CREATE UNIQUE INDEX patients_tenant_patient_id_key ON public.patients USING btree (tenant_id, patient_id);

CREATE INDEX report_pdfs_unfiled_idx ON public.report_pdfs USING btree (created_at) WHERE (filed_instance_id IS NULL);

CREATE INDEX report_presets_tenant_name_idx ON public.report_presets USING btree (tenant_id, name, id) WHERE (deleted_at IS NULL);

CREATE UNIQUE INDEX report_templates_one_active_global ON public.report_templates USING btree (tenant_id) WHERE (is_active AND (deleted_at IS NULL) AND (unit_id IS NULL));

CREATE UNIQUE INDEX report_templates_one_active_per_unit ON public.report_templates USING btree (unit_id) WHERE (is_active AND (deleted_at IS NULL) AND (unit_id IS NOT NULL));

CREATE INDEX report_templates_tenant_unit_idx ON public.report_templates USING btree (tenant_id, unit_id) WHERE (deleted_at IS NULL);

CREATE UNIQUE INDEX reports_one_draft_per_study ON public.reports USING btree (study_id) WHERE ((status)::text = 'draft'::text);

CREATE UNIQUE INDEX reports_one_report_per_study ON public.reports USING btree (study_id) WHERE ((kind)::text = 'report'::text);

CREATE INDEX reports_study_idx ON public.reports USING btree (study_id, created_at, id);

CREATE UNIQUE INDEX series_imgsrv_series_id_key ON public.series USING btree (imgsrv_series_id);

CREATE INDEX series_study_order_idx ON public.series USING btree (study_id, series_number, created_at, id);

CREATE INDEX shares_study_created_idx ON public.shares USING btree (study_id, created_at);

CREATE UNIQUE INDEX shares_token_hash_key ON public.shares USING btree (token_hash);

CREATE UNIQUE INDEX studies_imgsrv_study_id_key ON public.studies USING btree (imgsrv_study_id);

CREATE INDEX studies_order_idx ON public.studies USING btree (study_date DESC, created_at DESC, id DESC) INCLUDE (search_text);

CREATE INDEX studies_patient_order_idx ON public.studies USING btree (patient_uuid, study_date DESC, created_at DESC, id DESC);

CREATE INDEX studies_report_order_idx ON public.studies USING btree (tenant_id, report_status, study_date DESC, created_at DESC, id DESC) INCLUDE (unit_id);

CREATE INDEX studies_search_idx ON public.studies USING gin (public.search_lexemes(tenant_id, search_text)) WITH (fastupdate=off);

CREATE INDEX studies_tenant_order_idx ON public.studies USING btree (tenant_id, study_date DESC, created_at DESC, id DESC) INCLUDE (search_text);

CREATE INDEX studies_uid_idx ON public.studies USING btree (study_instance_uid);

CREATE INDEX studies_unit_order_idx ON public.studies USING btree (unit_id, study_date DESC, created_at DESC, id DESC) INCLUDE (tenant_id, search_text);

CREATE INDEX studies_unit_patient_idx ON public.studies USING btree (unit_id, patient_uuid) INCLUDE (tenant_id);

CREATE UNIQUE INDEX tenants_name_lower_key ON public.tenants USING btree (lower((name)::text));

CREATE UNIQUE INDEX tenants_slug_key ON public.tenants USING btree (slug);

CREATE UNIQUE INDEX thumbnails_series_key ON public.thumbnails USING btree (series_id) WHERE (series_id IS NOT NULL);

CREATE UNIQUE INDEX thumbnails_study_key ON public.thumbnails USING btree (study_id) WHERE (series_id IS NULL);

CREATE UNIQUE INDEX units_slug_key ON public.units USING btree (slug) WHERE (slug IS NOT NULL);

CREATE INDEX units_tenant_name_idx ON public.units USING btree (tenant_id, name, id);

CREATE UNIQUE INDEX units_tenant_name_lower_key ON public.units USING btree (tenant_id, lower((name)::text));

CREATE UNIQUE INDEX users_email_lower_key ON public.users USING btree (lower((email)::text));

CREATE INDEX users_tenant_unit_idx ON public.users USING btree (tenant_id, unit_id);

CREATE INDEX users_unit_idx ON public.users USING btree (unit_id);

CREATE STATISTICS public.studies_tenant_unit_stats (dependencies) ON tenant_id, unit_id FROM public.studies;

CREATE TRIGGER patients_counts_delete AFTER DELETE ON public.patients REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.patient_counts_on_delete();

CREATE TRIGGER patients_counts_insert AFTER INSERT ON public.patients REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.patient_counts_on_insert();

CREATE TRIGGER patients_counts_truncate AFTER TRUNCATE ON public.patients FOR EACH STATEMENT EXECUTE FUNCTION public.list_counts_on_truncate();

CREATE TRIGGER patients_counts_update AFTER UPDATE ON public.patients REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.patient_counts_on_update();

CREATE TRIGGER report_pdfs_kept BEFORE DELETE OR UPDATE ON public.report_pdfs FOR EACH ROW EXECUTE FUNCTION public.report_pdfs_kept();

CREATE TRIGGER reports_final_unchanged BEFORE DELETE OR UPDATE ON public.reports FOR EACH ROW WHEN (((old.status)::text = 'final'::text)) EXECUTE FUNCTION public.reports_final_unchanged();

CREATE TRIGGER studies_counts_delete AFTER DELETE ON public.studies REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.study_counts_on_delete();

CREATE TRIGGER studies_counts_insert AFTER INSERT ON public.studies REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.study_counts_on_insert();

CREATE TRIGGER studies_counts_truncate AFTER TRUNCATE ON public.studies FOR EACH STATEMENT EXECUTE FUNCTION public.list_counts_on_truncate();

CREATE TRIGGER studies_counts_update AFTER UPDATE ON public.studies REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.study_counts_on_update();

ALTER TABLE ONLY public.imgsrv_study_sync
    ADD CONSTRAINT imgsrv_study_sync_imgsrv_study_id_fkey FOREIGN KEY (imgsrv_study_id) REFERENCES public.studies(imgsrv_study_id) ON DELETE CASCADE;

ALTER TABLE ONLY public.instances
    ADD CONSTRAINT instances_series_id_fkey FOREIGN KEY (series_id) REFERENCES public.series(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.modalities
    ADD CONSTRAINT modalities_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.modalities
    ADD CONSTRAINT modalities_unit_id_fkey FOREIGN KEY (unit_id) REFERENCES public.units(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.patient_counts
    ADD CONSTRAINT patient_counts_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.patients
    ADD CONSTRAINT patients_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.report_pdfs
    ADD CONSTRAINT report_pdfs_report_id_fkey FOREIGN KEY (report_id) REFERENCES public.reports(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.report_pdfs
    ADD CONSTRAINT report_pdfs_signing_id_fkey FOREIGN KEY (signing_id) REFERENCES public.reports(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.report_presets
    ADD CONSTRAINT report_presets_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.report_presets
    ADD CONSTRAINT report_presets_unit_id_fkey FOREIGN KEY (unit_id) REFERENCES public.units(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.report_templates
    ADD CONSTRAINT report_templates_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.report_templates
    ADD CONSTRAINT report_templates_unit_id_fkey FOREIGN KEY (unit_id) REFERENCES public.units(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.reports
    ADD CONSTRAINT reports_amends_id_fkey FOREIGN KEY (amends_id) REFERENCES public.reports(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.reports
    ADD CONSTRAINT reports_author_id_fkey FOREIGN KEY (author_id) REFERENCES public.users(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.reports
    ADD CONSTRAINT reports_signed_by_id_fkey FOREIGN KEY (signed_by_id) REFERENCES public.users(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.reports
    ADD CONSTRAINT reports_study_id_fkey FOREIGN KEY (study_id) REFERENCES public.studies(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.reports
    ADD CONSTRAINT reports_template_id_fkey FOREIGN KEY (template_id) REFERENCES public.report_templates(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.reports
    ADD CONSTRAINT reports_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.reports
    ADD CONSTRAINT reports_unit_id_fkey FOREIGN KEY (unit_id) REFERENCES public.units(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.series
    ADD CONSTRAINT series_study_id_fkey FOREIGN KEY (study_id) REFERENCES public.studies(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.shares
    ADD CONSTRAINT shares_created_by_user_id_fkey FOREIGN KEY (created_by_user_id) REFERENCES public.users(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.shares
    ADD CONSTRAINT shares_study_id_fkey FOREIGN KEY (study_id) REFERENCES public.studies(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.shares
    ADD CONSTRAINT shares_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.studies
    ADD CONSTRAINT studies_patient_uuid_fkey FOREIGN KEY (patient_uuid) REFERENCES public.patients(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.studies
    ADD CONSTRAINT studies_reported_by_user_id_fkey FOREIGN KEY (reported_by_user_id) REFERENCES public.users(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.studies
    ADD CONSTRAINT studies_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.studies
    ADD CONSTRAINT studies_unit_id_fkey FOREIGN KEY (unit_id) REFERENCES public.units(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.study_counts
    ADD CONSTRAINT study_counts_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.study_counts
    ADD CONSTRAINT study_counts_unit_id_fkey FOREIGN KEY (unit_id) REFERENCES public.units(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.thumbnails
    ADD CONSTRAINT thumbnails_series_id_fkey FOREIGN KEY (series_id) REFERENCES public.series(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.thumbnails
    ADD CONSTRAINT thumbnails_study_id_fkey FOREIGN KEY (study_id) REFERENCES public.studies(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.units
    ADD CONSTRAINT units_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.upload_placements
    ADD CONSTRAINT upload_placements_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.upload_placements
    ADD CONSTRAINT upload_placements_unit_id_fkey FOREIGN KEY (unit_id) REFERENCES public.units(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.upload_placements
    ADD CONSTRAINT upload_placements_uploaded_by_user_id_fkey FOREIGN KEY (uploaded_by_user_id) REFERENCES public.users(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE RESTRICT;

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_unit_id_fkey FOREIGN KEY (unit_id) REFERENCES public.units(id) ON DELETE RESTRICT;
