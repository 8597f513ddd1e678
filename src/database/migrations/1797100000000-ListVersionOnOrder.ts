import { MigrationInterface, QueryRunner } from 'typeorm';

// What a filtered count reads: the scope, the patient link, the report status, the searched fields.
const STUDY_COUNTED = [
  'tenant_id',
  'unit_id',
  'patient_uuid',
  'patient_name',
  'patient_id',
  'accession_number',
  'report_status',
];
const PATIENT_COUNTED = ['tenant_id', 'patient_name', 'patient_id'];

/**
 * The list counters' version also moves when a record's place in its list order changes: a study's
 * study_date or created_at, a patient's created_at (its name was already there). A search seen
 * before walks its pages from its first match's place in the list order (ListSpec.walkFrom), which
 * holds only while no match moves before it, and ingesting a study again may change its date.
 */
export class ListVersionOnOrder1797100000000 implements MigrationInterface {
  name = 'ListVersionOnOrder1797100000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(studyCountsOnUpdate([...STUDY_COUNTED, 'study_date', 'created_at']));
    await q.query(patientCountsOnUpdate([...PATIENT_COUNTED, 'created_at']));
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(studyCountsOnUpdate(STUDY_COUNTED));
    await q.query(patientCountsOnUpdate(PATIENT_COUNTED));
  }
}

const row = (alias: string, columns: string[]) => `(${columns.map((column) => `${alias}.${column}`).join(', ')})`;

/** The InitialSchema migration's study_counts_on_update, its version moved by a change of `columns`. */
function studyCountsOnUpdate(columns: string[]): string {
  return `
      CREATE OR REPLACE FUNCTION study_counts_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO study_counts AS c (tenant_id, unit_id, studies, version)
        SELECT tenant_id, unit_id, sum(delta), nextval('list_counts_version')
          FROM (
            SELECT o.tenant_id, o.unit_id, CASE WHEN (o.tenant_id, o.unit_id) IS DISTINCT FROM (n.tenant_id, n.unit_id) THEN -1 ELSE 0 END
              FROM old_rows o JOIN new_rows n ON n.id = o.id
             WHERE ${row('o', columns)}
                   IS DISTINCT FROM ${row('n', columns)}
            UNION ALL
            SELECT n.tenant_id, n.unit_id, 1
              FROM old_rows o JOIN new_rows n ON n.id = o.id
             WHERE (o.tenant_id, o.unit_id) IS DISTINCT FROM (n.tenant_id, n.unit_id)
          ) d (tenant_id, unit_id, delta)
         GROUP BY tenant_id, unit_id ORDER BY tenant_id, unit_id
        ON CONFLICT (tenant_id, unit_id) DO UPDATE
          SET studies = c.studies + EXCLUDED.studies, version = EXCLUDED.version;
        RETURN NULL;
      END $$`;
}

/** The InitialSchema migration's patient_counts_on_update, its version moved by a change of `columns`. */
function patientCountsOnUpdate(columns: string[]): string {
  return `
      CREATE OR REPLACE FUNCTION patient_counts_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO patient_counts AS c (tenant_id, patients, version)
        SELECT tenant_id, sum(delta), nextval('list_counts_version')
          FROM (
            SELECT o.tenant_id, CASE WHEN o.tenant_id IS DISTINCT FROM n.tenant_id THEN -1 ELSE 0 END
              FROM old_rows o JOIN new_rows n ON n.id = o.id
             WHERE ${row('o', columns)} IS DISTINCT FROM ${row('n', columns)}
            UNION ALL
            SELECT n.tenant_id, 1
              FROM old_rows o JOIN new_rows n ON n.id = o.id
             WHERE o.tenant_id IS DISTINCT FROM n.tenant_id
          ) d (tenant_id, delta)
         GROUP BY tenant_id ORDER BY tenant_id
        ON CONFLICT (tenant_id) DO UPDATE
          SET patients = c.patients + EXCLUDED.patients, version = EXCLUDED.version;
        RETURN NULL;
      END $$`;
}
