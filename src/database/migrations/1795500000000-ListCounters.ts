import { MigrationInterface, QueryRunner } from 'typeorm';
import {
  PATIENT_VERSION_COLUMNS,
  patientCountsOnUpdateSql,
  rebuildListCountsSql,
  STUDY_VERSION_COLUMNS,
  studyCountsOnUpdateSql,
} from '../migration-sql/list-counter-triggers';

/**
 * Exact list totals without counting a large tenant on every page.
 *
 * `study_counts` holds the number of studies per (tenant, unit) and `patient_counts` the number of
 * patients per tenant, kept by statement-level triggers (one upsert per statement and per touched
 * scope, whatever the number of rows, so bulk loads stay cheap). An unfiltered list's total is then
 * the sum of a few counter rows (one per unit of the scope) instead of a count over up to millions
 * of index entries.
 *
 * Every change that can alter a count, filtered or not (a study added, removed or moved, a change
 * of its patient, patient name, patient id or accession number; a patient added, removed or
 * renamed), also sets the touched row's `version` to a new value of one sequence. The sum of the
 * versions over a scope thus changes with every committed change in it, and a filtered count
 * (a search) can be cached under (scope, filters, version sum) and stay exact: a change makes a new
 * key instead of serving a stale total.
 *
 * Rows are upserted in (tenant_id, unit_id) order so two statements touching the same counters lock
 * them in the same order. TRUNCATE resets the counters; rebuild_list_counts() recounts everything
 * (used after bulk loads that disable triggers, and by this migration).
 */
export class ListCounters1795500000000 implements MigrationInterface {
  name = 'ListCounters1795500000000';

  public async up(q: QueryRunner): Promise<void> {
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

    await q.query(`
      CREATE FUNCTION study_counts_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO study_counts AS c (tenant_id, unit_id, studies, version)
        SELECT tenant_id, unit_id, count(*), nextval('list_counts_version')
          FROM new_rows GROUP BY tenant_id, unit_id ORDER BY tenant_id, unit_id
        ON CONFLICT (tenant_id, unit_id) DO UPDATE
          SET studies = c.studies + EXCLUDED.studies, version = EXCLUDED.version;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE FUNCTION study_counts_on_delete() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO study_counts AS c (tenant_id, unit_id, studies, version)
        SELECT tenant_id, unit_id, -count(*), nextval('list_counts_version')
          FROM old_rows GROUP BY tenant_id, unit_id ORDER BY tenant_id, unit_id
        ON CONFLICT (tenant_id, unit_id) DO UPDATE
          SET studies = c.studies + EXCLUDED.studies, version = EXCLUDED.version;
        RETURN NULL;
      END $$`);
    await q.query(studyCountsOnUpdateSql(STUDY_VERSION_COLUMNS));

    await q.query(`
      CREATE FUNCTION patient_counts_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO patient_counts AS c (tenant_id, patients, version)
        SELECT tenant_id, count(*), nextval('list_counts_version')
          FROM new_rows GROUP BY tenant_id ORDER BY tenant_id
        ON CONFLICT (tenant_id) DO UPDATE
          SET patients = c.patients + EXCLUDED.patients, version = EXCLUDED.version;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE FUNCTION patient_counts_on_delete() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO patient_counts AS c (tenant_id, patients, version)
        SELECT tenant_id, -count(*), nextval('list_counts_version')
          FROM old_rows GROUP BY tenant_id ORDER BY tenant_id
        ON CONFLICT (tenant_id) DO UPDATE
          SET patients = c.patients + EXCLUDED.patients, version = EXCLUDED.version;
        RETURN NULL;
      END $$`);
    await q.query(patientCountsOnUpdateSql(PATIENT_VERSION_COLUMNS));

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

    await q.query(rebuildListCountsSql([]));

    for (const [event, fn, transition] of [
      ['INSERT', 'study_counts_on_insert', 'NEW TABLE AS new_rows'],
      ['DELETE', 'study_counts_on_delete', 'OLD TABLE AS old_rows'],
      ['UPDATE', 'study_counts_on_update', 'OLD TABLE AS old_rows NEW TABLE AS new_rows'],
    ]) {
      await q.query(
        `CREATE TRIGGER studies_counts_${event.toLowerCase()} AFTER ${event} ON studies
           REFERENCING ${transition} FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`,
      );
    }
    for (const [event, fn, transition] of [
      ['INSERT', 'patient_counts_on_insert', 'NEW TABLE AS new_rows'],
      ['DELETE', 'patient_counts_on_delete', 'OLD TABLE AS old_rows'],
      ['UPDATE', 'patient_counts_on_update', 'OLD TABLE AS old_rows NEW TABLE AS new_rows'],
    ]) {
      await q.query(
        `CREATE TRIGGER patients_counts_${event.toLowerCase()} AFTER ${event} ON patients
           REFERENCING ${transition} FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`,
      );
    }
    await q.query(
      `CREATE TRIGGER studies_counts_truncate AFTER TRUNCATE ON studies FOR EACH STATEMENT EXECUTE FUNCTION list_counts_on_truncate()`,
    );
    await q.query(
      `CREATE TRIGGER patients_counts_truncate AFTER TRUNCATE ON patients FOR EACH STATEMENT EXECUTE FUNCTION list_counts_on_truncate()`,
    );

    await q.query(`SELECT rebuild_list_counts()`);
  }

  public async down(q: QueryRunner): Promise<void> {
    for (const trigger of ['insert', 'update', 'delete', 'truncate']) {
      await q.query(`DROP TRIGGER IF EXISTS studies_counts_${trigger} ON studies`);
      await q.query(`DROP TRIGGER IF EXISTS patients_counts_${trigger} ON patients`);
    }
    await q.query(`DROP FUNCTION IF EXISTS rebuild_list_counts()`);
    await q.query(`DROP FUNCTION IF EXISTS list_counts_on_truncate()`);
    for (const table of ['study', 'patient']) {
      for (const event of ['insert', 'update', 'delete']) {
        await q.query(`DROP FUNCTION IF EXISTS ${table}_counts_on_${event}()`);
      }
    }
    await q.query(`DROP TABLE IF EXISTS patient_counts`);
    await q.query(`DROP TABLE IF EXISTS study_counts`);
    await q.query(`DROP SEQUENCE IF EXISTS list_counts_version`);
  }
}
