import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A list's version also moves when a record's place in the list order changes (a study's study_date
 * or created_at, a patient's created_at): a search seen before walks its pages from its first
 * match's place (ListSpec.walkFrom), which holds only while no match moves before it, and ingesting
 * a study again may change its date. The two functions are InitialSchema's with more columns watched.
 */
export class ListVersionOnOrder1797100000000 implements MigrationInterface {
  name = 'ListVersionOnOrder1797100000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(countsOnUpdate('study', ['study_date', 'created_at']));
    await q.query(countsOnUpdate('patient', ['created_at']));
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(countsOnUpdate('study', []));
    await q.query(countsOnUpdate('patient', []));
  }
}

const LISTS = {
  // The scope, and what a filtered count reads: the patient link, the report status, the searched fields.
  study: {
    scope: ['tenant_id', 'unit_id'],
    counter: 'studies',
    counted: ['patient_uuid', 'patient_name', 'patient_id', 'accession_number', 'report_status'],
  },
  patient: { scope: ['tenant_id'], counter: 'patients', counted: ['patient_name', 'patient_id'] },
};

/** `<list>_counts_on_update`: the rows that left a scope count -1 in it and +1 in the new one; any change of `watched` moves the version. */
function countsOnUpdate(list: keyof typeof LISTS, watched: string[]): string {
  const { scope, counter, counted } = LISTS[list];
  const of = (alias: string, columns: string[]) => `(${columns.map((column) => `${alias}.${column}`).join(', ')})`;
  const moved = `${of('o', scope)} IS DISTINCT FROM ${of('n', scope)}`;
  const columns = [...scope, ...counted, ...watched];
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
