import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The list counters' update triggers. Counts follow a record that moves to another scope; the
 * version moves when what a filtered count reads changes, and when the record's place in the list
 * order does (a study's study_date or created_at, a patient's created_at): a search seen before walks
 * its pages from its first match's place (ListSpec.walkFrom), which holds only while no match moves
 * before it, and ingesting a study again may change its date. Other updates (modalities, the
 * worker's refresh) take no counter lock. OR REPLACE: a database created before this migration has
 * the triggers with fewer columns watched.
 */
export class ListVersionOnOrder1797100000000 implements MigrationInterface {
  name = 'ListVersionOnOrder1797100000000';

  public async up(q: QueryRunner): Promise<void> {
    for (const [list, table] of [
      ['study', 'studies'],
      ['patient', 'patients'],
    ] as const) {
      await q.query(countsOnUpdate(list));
      await q.query(`CREATE OR REPLACE TRIGGER ${table}_counts_update AFTER UPDATE ON ${table}
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${list}_counts_on_update()`);
    }
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER studies_counts_update ON studies; DROP TRIGGER patients_counts_update ON patients`);
    await q.query(`DROP FUNCTION study_counts_on_update(), patient_counts_on_update()`);
  }
}

const LISTS = {
  // The scope; what a filtered count reads (the patient link, the report status, the searched
  // fields); the list order's columns.
  study: {
    scope: ['tenant_id', 'unit_id'],
    counter: 'studies',
    watched: ['patient_uuid', 'patient_name', 'patient_id', 'accession_number', 'report_status', 'study_date', 'created_at'],
  },
  patient: { scope: ['tenant_id'], counter: 'patients', watched: ['patient_name', 'patient_id', 'created_at'] },
};

/** `<list>_counts_on_update`: the rows that left a scope count -1 in it and +1 in the new one; any change of `watched` moves the version. */
function countsOnUpdate(list: keyof typeof LISTS): string {
  const { scope, counter, watched } = LISTS[list];
  const of = (alias: string, columns: string[]) => `(${columns.map((column) => `${alias}.${column}`).join(', ')})`;
  const moved = `${of('o', scope)} IS DISTINCT FROM ${of('n', scope)}`;
  const columns = [...scope, ...watched];
  return `
      CREATE OR REPLACE FUNCTION ${list}_counts_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO ${list}_counts AS c (${scope.join(', ')}, ${counter}, version)
        SELECT ${scope.join(', ')}, sum(delta), nextval('list_counts_version')
          FROM (
            SELECT ${scope.map((c) => `o.${c}`).join(', ')}, CASE WHEN ${moved} THEN -1 ELSE 0 END
              FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE ${of('o', columns)} IS DISTINCT FROM ${of('n', columns)}
            UNION ALL
            SELECT ${scope.map((c) => `n.${c}`).join(', ')}, 1 FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE ${moved}
          ) d (${scope.join(', ')}, delta)
         GROUP BY ${scope.join(', ')} ORDER BY ${scope.join(', ')}
        ON CONFLICT (${scope.join(', ')}) DO UPDATE
          SET ${counter} = c.${counter} + EXCLUDED.${counter}, version = EXCLUDED.version;
        RETURN NULL;
      END $$`;
}
