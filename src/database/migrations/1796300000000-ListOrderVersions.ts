import { MigrationInterface, QueryRunner } from 'typeorm';
import {
  PATIENT_VERSION_COLUMNS,
  patientCountsOnUpdateSql,
  STUDY_VERSION_COLUMNS,
  studyCountsOnUpdateSql,
} from '../migration-sql/list-counter-triggers';

/**
 * The scope's version (ListCounters) also moves when a record's place in its list changes: a
 * study's date or creation time, a patient's creation time (a patient's name, the other half of
 * its order, moved it already). A searched page's ids can then be kept under the version they were
 * read at (ListTotals.keepPage) and read again by id while the version stands: the same rows, in
 * the same order, as the search would find. Updates that change neither (report status,
 * modalities, the ingestion worker's refresh of an unchanged study) still take no counter lock.
 */
export class ListOrderVersions1796300000000 implements MigrationInterface {
  name = 'ListOrderVersions1796300000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(studyCountsOnUpdateSql([...STUDY_VERSION_COLUMNS, 'study_date', 'created_at'], true));
    await q.query(patientCountsOnUpdateSql([...PATIENT_VERSION_COLUMNS, 'created_at'], true));
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(studyCountsOnUpdateSql(STUDY_VERSION_COLUMNS, true));
    await q.query(patientCountsOnUpdateSql(PATIENT_VERSION_COLUMNS, true));
  }
}
