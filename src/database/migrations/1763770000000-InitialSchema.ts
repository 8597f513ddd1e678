import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The whole first schema. Uniqueness rules of the contract live here as unique indexes
 * (case-insensitive ones on lower(...)) so that concurrent requests cannot both win.
 * List endpoints get indexes in their scope + sort order; ILIKE searches get pg_trgm GIN indexes.
 */
export class InitialSchema1763770000000 implements MigrationInterface {
  name = 'InitialSchema1763770000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE EXTENSION IF NOT EXISTS pgcrypto`);
    await q.query(`CREATE EXTENSION IF NOT EXISTS pg_trgm`);

    await q.query(`
      CREATE TABLE tenants (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        name varchar(255) NOT NULL,
        slug varchar(255) NOT NULL,
        is_active boolean NOT NULL DEFAULT true,
        logo text NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE UNIQUE INDEX tenants_name_lower_key ON tenants (lower(name))`);
    await q.query(`CREATE UNIQUE INDEX tenants_slug_key ON tenants (slug)`);
    await q.query(`CREATE INDEX tenants_name_trgm ON tenants USING gin (name gin_trgm_ops)`);
    await q.query(`CREATE INDEX tenants_slug_trgm ON tenants USING gin (slug gin_trgm_ops)`);

    await q.query(`
      CREATE TABLE units (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE RESTRICT,
        name varchar(255) NOT NULL,
        slug varchar(255) NULL,
        is_active boolean NOT NULL DEFAULT true,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE UNIQUE INDEX units_tenant_name_lower_key ON units (tenant_id, lower(name))`);
    await q.query(`CREATE UNIQUE INDEX units_slug_key ON units (slug) WHERE slug IS NOT NULL`);
    await q.query(`CREATE INDEX units_tenant_name_idx ON units (tenant_id, name, id)`);

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
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE UNIQUE INDEX users_email_lower_key ON users (lower(email))`);
    await q.query(`CREATE INDEX users_tenant_unit_idx ON users (tenant_id, unit_id)`);
    await q.query(`CREATE INDEX users_unit_idx ON users (unit_id)`);

    await q.query(`
      CREATE TABLE modalities (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE RESTRICT,
        unit_id uuid NOT NULL REFERENCES units(id) ON DELETE RESTRICT,
        name varchar(255) NOT NULL,
        aet varchar(16) NOT NULL,
        ip_address varchar(45) NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE UNIQUE INDEX modalities_aet_key ON modalities (aet)`);
    await q.query(`CREATE UNIQUE INDEX modalities_unit_name_lower_key ON modalities (unit_id, lower(name))`);
    await q.query(`CREATE INDEX modalities_tenant_idx ON modalities (tenant_id)`);

    await q.query(`
      CREATE TABLE patients (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE RESTRICT,
        patient_id varchar(64) NOT NULL,
        patient_name varchar(255) NOT NULL,
        patient_birth_date date NULL,
        patient_sex varchar(1) NULL CHECK (patient_sex IN ('M', 'F')),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE UNIQUE INDEX patients_tenant_patient_id_key ON patients (tenant_id, patient_id)`);
    await q.query(`CREATE INDEX patients_tenant_order_idx ON patients (tenant_id, patient_name, created_at DESC, id)`);
    await q.query(`CREATE INDEX patients_order_idx ON patients (patient_name, created_at DESC, id)`);
    await q.query(`CREATE INDEX patients_name_trgm ON patients USING gin (patient_name gin_trgm_ops)`);
    await q.query(`CREATE INDEX patients_pid_trgm ON patients USING gin (patient_id gin_trgm_ops)`);

    await q.query(`
      CREATE TABLE studies (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE RESTRICT,
        unit_id uuid NOT NULL REFERENCES units(id) ON DELETE RESTRICT,
        patient_uuid uuid NULL REFERENCES patients(id) ON DELETE SET NULL,
        imgsrv_study_id varchar(64) NOT NULL,
        study_instance_uid varchar(64) NOT NULL,
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
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE UNIQUE INDEX studies_imgsrv_study_id_key ON studies (imgsrv_study_id)`);
    await q.query(`CREATE INDEX studies_uid_idx ON studies (study_instance_uid)`);
    await q.query(`CREATE INDEX studies_order_idx ON studies (study_date DESC, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX studies_tenant_order_idx ON studies (tenant_id, study_date DESC, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX studies_unit_order_idx ON studies (unit_id, study_date DESC, created_at DESC, id DESC)`);
    await q.query(
      `CREATE INDEX studies_patient_order_idx ON studies (patient_uuid, study_date DESC, created_at DESC, id DESC)`,
    );
    await q.query(`CREATE INDEX studies_patient_name_trgm ON studies USING gin (patient_name gin_trgm_ops)`);
    await q.query(`CREATE INDEX studies_patient_id_trgm ON studies USING gin (patient_id gin_trgm_ops)`);
    await q.query(`CREATE INDEX studies_accession_trgm ON studies USING gin (accession_number gin_trgm_ops)`);

    await q.query(`
      CREATE TABLE series (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        study_id uuid NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
        imgsrv_series_id varchar(64) NOT NULL,
        series_instance_uid varchar(64) NOT NULL,
        modality varchar(16) NOT NULL,
        series_number integer NOT NULL,
        manufacturer varchar(255) NULL,
        instance_count integer NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE UNIQUE INDEX series_imgsrv_series_id_key ON series (imgsrv_series_id)`);
    await q.query(`CREATE INDEX series_study_order_idx ON series (study_id, series_number, created_at, id)`);

    await q.query(`
      CREATE TABLE instances (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        series_id uuid NOT NULL REFERENCES series(id) ON DELETE CASCADE,
        imgsrv_instance_id varchar(64) NOT NULL,
        sop_instance_uid varchar(64) NOT NULL,
        instance_number integer NOT NULL,
        rows integer NULL,
        columns integer NULL,
        slice_thickness double precision NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE UNIQUE INDEX instances_imgsrv_instance_id_key ON instances (imgsrv_instance_id)`);
    await q.query(`CREATE INDEX instances_series_order_idx ON instances (series_id, instance_number, created_at, id)`);

    await q.query(`
      CREATE TABLE thumbnails (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        study_id uuid NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
        series_id uuid NULL REFERENCES series(id) ON DELETE CASCADE,
        content_type varchar(64) NOT NULL DEFAULT 'image/jpeg',
        data bytea NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE UNIQUE INDEX thumbnails_study_key ON thumbnails (study_id) WHERE series_id IS NULL`);
    await q.query(`CREATE UNIQUE INDEX thumbnails_series_key ON thumbnails (series_id) WHERE series_id IS NOT NULL`);

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
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        deleted_at timestamptz NULL
      )`);
    await q.query(
      `CREATE INDEX report_templates_tenant_unit_idx ON report_templates (tenant_id, unit_id) WHERE deleted_at IS NULL`,
    );
    // At most one active template per unit (and one active global template per tenant).
    await q.query(
      `CREATE UNIQUE INDEX report_templates_one_active_per_unit ON report_templates (unit_id)
       WHERE is_active AND deleted_at IS NULL AND unit_id IS NOT NULL`,
    );
    await q.query(
      `CREATE UNIQUE INDEX report_templates_one_active_global ON report_templates (tenant_id)
       WHERE is_active AND deleted_at IS NULL AND unit_id IS NULL`,
    );

    // Studies from an unregistered AE title land here; nobody logs in to it.
    await q.query(`
      WITH t AS (
        INSERT INTO tenants (name, slug, is_active) VALUES ('Quarantine', 'quarantine', false)
        RETURNING id
      )
      INSERT INTO units (tenant_id, name, slug, is_active) SELECT id, 'Quarantine', 'quarantine', false FROM t`);
  }

  public async down(q: QueryRunner): Promise<void> {
    for (const table of [
      'report_templates',
      'thumbnails',
      'instances',
      'series',
      'studies',
      'patients',
      'modalities',
      'users',
      'units',
      'tenants',
    ]) {
      await q.query(`DROP TABLE IF EXISTS ${table}`);
    }
  }
}
