// SQL shared by migrations. Not in migrations/: TypeORM loads every function a file there exports
// as a migration class.

/** The studies' columns whose change moves the version without moving a count (see the class). */
export const STUDY_VERSION_COLUMNS = ['patient_uuid', 'patient_name', 'patient_id', 'accession_number'];
/** The patients' columns whose change moves the version without moving a count. */
export const PATIENT_VERSION_COLUMNS = ['patient_name', 'patient_id'];

const tuple = (alias: string, columns: string[]) => `(${columns.map((c) => `${alias}.${c}`).join(', ')})`;

/**
 * The studies' update trigger function: counts follow a study that moves (tenant, unit); the
 * version of its counter rows also moves when one of `edited` changes. Only updates that can change
 * what a kept total or page holds touch the counters (a report status or the modalities do not), so
 * the frequent updates of the ingestion worker take no counter lock.
 */
export function studyCountsOnUpdateSql(edited: string[], replace = false): string {
  return `
      CREATE ${replace ? 'OR REPLACE ' : ''}FUNCTION study_counts_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO study_counts AS c (tenant_id, unit_id, studies, version)
        SELECT tenant_id, unit_id, sum(delta), nextval('list_counts_version')
          FROM (
            SELECT o.tenant_id, o.unit_id, CASE WHEN moved THEN -1 ELSE 0 END AS delta
              FROM (SELECT o.tenant_id, o.unit_id,
                           (o.tenant_id, o.unit_id) IS DISTINCT FROM (n.tenant_id, n.unit_id) AS moved,
                           ${tuple('o', edited)}
                             IS DISTINCT FROM ${tuple('n', edited)} AS edited
                      FROM old_rows o JOIN new_rows n ON n.id = o.id) o
             WHERE moved OR edited
            UNION ALL
            SELECT n.tenant_id, n.unit_id, 1
              FROM old_rows o JOIN new_rows n ON n.id = o.id
             WHERE (o.tenant_id, o.unit_id) IS DISTINCT FROM (n.tenant_id, n.unit_id)
          ) d
         GROUP BY tenant_id, unit_id ORDER BY tenant_id, unit_id
        ON CONFLICT (tenant_id, unit_id) DO UPDATE
          SET studies = c.studies + EXCLUDED.studies, version = EXCLUDED.version;
        RETURN NULL;
      END $$`;
}

/** The patients' update trigger function, as studyCountsOnUpdateSql (per tenant). */
export function patientCountsOnUpdateSql(edited: string[], replace = false): string {
  return `
      CREATE ${replace ? 'OR REPLACE ' : ''}FUNCTION patient_counts_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO patient_counts AS c (tenant_id, patients, version)
        SELECT tenant_id, sum(delta), nextval('list_counts_version')
          FROM (
            SELECT o.tenant_id, CASE WHEN o.tenant_id IS DISTINCT FROM n.tenant_id THEN -1 ELSE 0 END AS delta
              FROM old_rows o JOIN new_rows n ON n.id = o.id
             WHERE ${tuple('o', ['tenant_id', ...edited])} IS DISTINCT FROM ${tuple('n', ['tenant_id', ...edited])}
            UNION ALL
            SELECT n.tenant_id, 1
              FROM old_rows o JOIN new_rows n ON n.id = o.id
             WHERE o.tenant_id IS DISTINCT FROM n.tenant_id
          ) d
         GROUP BY tenant_id ORDER BY tenant_id
        ON CONFLICT (tenant_id) DO UPDATE
          SET patients = c.patients + EXCLUDED.patients, version = EXCLUDED.version;
        RETURN NULL;
      END $$`;
}

// The body of rebuild_list_counts(): the list counters recounted.
const REBUILD_LIST_COUNTS = `
        -- Writers wait while the recount runs, so the result is exact.
        LOCK TABLE studies, patients IN SHARE MODE;
        DELETE FROM study_counts;
        INSERT INTO study_counts (tenant_id, unit_id, studies, version)
        SELECT tenant_id, unit_id, count(*), nextval('list_counts_version')
          FROM studies GROUP BY tenant_id, unit_id;
        DELETE FROM patient_counts;
        INSERT INTO patient_counts (tenant_id, patients, version)
        SELECT tenant_id, count(*), nextval('list_counts_version') FROM patients GROUP BY tenant_id;
`;

/**
 * rebuild_list_counts(), which bulk loads call after loading with triggers off: the list counters
 * recounted (ListCounters), then each function of `then` performed (what later migrations keep:
 * SearchPieceCounts, SearchPiecePages).
 */
export function rebuildListCountsSql(then: string[]): string {
  return `
      CREATE OR REPLACE FUNCTION rebuild_list_counts() RETURNS void LANGUAGE plpgsql AS $$
      BEGIN
        ${REBUILD_LIST_COUNTS}${then.map((f) => `\n        PERFORM ${f}();`).join('')}
      END $$`;
}
