import { MigrationInterface, QueryRunner } from 'typeorm';

const SECTION_MAX = 20000;
const sections = ['indication', 'technique', 'findings', 'impression'];

/**
 * Reports and addenda of a study, the PDFs kept at each signing, and the clinics' report presets
 * (decisions §3c). What the API promises is also held by the database, so no code path (or two
 * concurrent requests) can break it:
 * - one draft at a time per study, and one report (addenda aside) per study: partial unique indexes;
 * - a final report never changes and is never deleted: a trigger refuses it;
 * - a kept PDF's bytes never change: a trigger refuses it.
 */
export class Reports1797100000000 implements MigrationInterface {
  name = 'Reports1797100000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE reports (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        study_id uuid NOT NULL REFERENCES studies(id) ON DELETE RESTRICT,
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE RESTRICT,
        unit_id uuid NOT NULL REFERENCES units(id) ON DELETE RESTRICT,
        kind varchar(16) NOT NULL CHECK (kind IN ('report', 'addendum')),
        amends_id uuid NULL REFERENCES reports(id) ON DELETE RESTRICT,
        status varchar(16) NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'final')),
        ${sections.map((s) => `${s} text NULL CHECK (char_length(${s}) <= ${SECTION_MAX})`).join(',\n        ')},
        template_id uuid NULL REFERENCES report_templates(id) ON DELETE RESTRICT,
        version integer NOT NULL DEFAULT 1,
        author_id uuid NOT NULL REFERENCES users(id) ON DELETE RESTRICT,
        signed_by_id uuid NULL REFERENCES users(id) ON DELETE RESTRICT,
        signed_by_name varchar(255) NULL,
        signed_by_crm varchar(12) NULL,
        signed_at timestamptz NULL,
        signed_layout jsonb NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT reports_addendum_amends CHECK ((kind = 'addendum') = (amends_id IS NOT NULL)),
        CONSTRAINT reports_final_signed CHECK (
          (status = 'final') = (signed_at IS NOT NULL AND signed_by_id IS NOT NULL AND signed_layout IS NOT NULL))
      )`);
    await q.query(`CREATE INDEX reports_study_idx ON reports (study_id, created_at, id)`);
    await q.query(`CREATE UNIQUE INDEX reports_one_draft_per_study ON reports (study_id) WHERE status = 'draft'`);
    await q.query(`CREATE UNIQUE INDEX reports_one_report_per_study ON reports (study_id) WHERE kind = 'report'`);
    await q.query(`
      CREATE FUNCTION reports_final_unchanged() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'report % is final and cannot change', OLD.id USING ERRCODE = 'P0001', HINT = 'final-report';
      END $$`);
    await q.query(`
      CREATE TRIGGER reports_final_unchanged BEFORE UPDATE OR DELETE ON reports
        FOR EACH ROW WHEN (OLD.status = 'final') EXECUTE FUNCTION reports_final_unchanged()`);

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

    await q.query(`
      CREATE TABLE report_presets (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE RESTRICT,
        unit_id uuid NULL REFERENCES units(id) ON DELETE RESTRICT,
        name varchar(255) NOT NULL,
        modality varchar(16) NULL,
        ${sections.map((s) => `${s} text NULL`).join(',\n        ')},
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        deleted_at timestamptz NULL
      )`);
    await q.query(
      `CREATE INDEX report_presets_tenant_name_idx ON report_presets (tenant_id, name, id) WHERE deleted_at IS NULL`,
    );
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS report_presets`);
    await q.query(`DROP TABLE IF EXISTS report_pdfs`);
    await q.query(`DROP FUNCTION IF EXISTS report_pdfs_kept()`);
    await q.query(`DROP TABLE IF EXISTS reports`);
    await q.query(`DROP FUNCTION IF EXISTS reports_final_unchanged()`);
  }
}
