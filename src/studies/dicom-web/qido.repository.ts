import { Injectable } from '@nestjs/common';
import { DataScope, scopeCondition } from '../../common/auth/data-scope';
import { PreparedQueries, SqlParams } from '../../database/list';
import { InsensitiveMatch, QidoStudyQuery, TextMatch } from './qido-query';

/** A study as the QIDO-RS search reads it: DICOM-formatted dates, counts from the series. */
export interface QidoStudyRow {
  study_instance_uid: string;
  patient_name: string;
  patient_id: string;
  /** YYYYMMDD */
  patient_birth_date: string | null;
  patient_sex: string | null;
  /** YYYYMMDD */
  study_date: string;
  accession_number: string | null;
  study_description: string | null;
  modalities: string[] | null;
  series_count: string;
  instance_count: string;
}

// The studies list's order (studies.repository.ts LIST_ORDER): the scope's order index
// (studies_unit_order_idx, studies_tenant_order_idx or studies_order_idx) reads a page of the
// worklist without sorting, as it does for GET /api/studies.
const LIST_ORDER = 's.study_date DESC, s.created_at DESC, s.id DESC';

/**
 * The QIDO-RS study search over the archive's own index. One statement: the page is chosen first
 * (scope and filters on studies alone, in list order), and only the page's studies then count
 * their series and instances (series_study_order_idx, a handful of rows each), so the counts cost
 * nothing per study outside the page.
 */
@Injectable()
export class QidoRepository {
  constructor(private readonly prepared: PreparedQueries) {}

  searchStudies(scope: DataScope, query: QidoStudyQuery): Promise<QidoStudyRow[]> {
    const p = new SqlParams();
    const where = [p.bind(scopeCondition(scope, { tenant: 's.tenant_id', unit: 's.unit_id' }))];
    const text = (column: string, match: TextMatch | undefined) => {
      if (match) where.push('exact' in match ? `${column} = ${p.add(match.exact)}` : `${column} ILIKE ${p.add(match.pattern)}`);
    };
    // Names and descriptions ignore case and accents (a regular expression); ids match as typed,
    // their wildcards case-insensitively. A patient name with a literal run of 3+ letters or digits
    // is first tested on the folded text the order indexes carry (the regular expression then
    // decides). In one unit's studies (a few thousand) walking the unit's list order
    // and testing each row is cheaper than an index whose matches for a common fragment ("silva": a
    // fifth of all names) are tens of thousands of rows of the whole clinic: coalesce() hides the
    // expression from the planner (measured on the 1M seed with the former trigram index, a
    // doctor's "*silva*": p50 792 ms through the index).
    const opaque = scope.kind === 'unit';
    const insensitive = (column: string, match: InsensitiveMatch | undefined, indexed = false) => {
      if (!match) return;
      const condition = `${column} ~ ${p.add(match.regex)}`;
      if (opaque) where.push(`coalesce(${condition}, false)`);
      else {
        where.push(condition);
        if (indexed && match.indexedRun) where.push(`s.search_text LIKE search_pattern(${p.add(match.indexedRun)})`);
      }
    };
    insensitive('s.patient_name', query.patientName, true);
    insensitive('s.study_description', query.studyDescription);
    text('s.patient_id', query.patientId);
    text('s.accession_number', query.accessionNumber);
    if (query.studyInstanceUids) where.push(`s.study_instance_uid = ANY(${p.add(query.studyInstanceUids)}::varchar[])`);
    if (query.studyDate?.from) where.push(`s.study_date >= ${p.add(query.studyDate.from)}::date`);
    if (query.studyDate?.to) where.push(`s.study_date <= ${p.add(query.studyDate.to)}::date`);
    if (query.modalities) {
      const wanted = `${p.add(query.modalities)}::text[]`;
      // `modalities` is written when the study's series are indexed; until then, the series say.
      where.push(`(s.modalities && ${wanted} OR (s.modalities IS NULL AND EXISTS (
                    SELECT 1 FROM series se WHERE se.study_id = s.id AND se.modality = ANY(${wanted}))))`);
    }
    return this.prepared.query<QidoStudyRow>(
      `SELECT s.study_instance_uid, s.patient_name, s.patient_id, to_char(s.patient_birth_date, 'YYYYMMDD') AS patient_birth_date,
              s.patient_sex, to_char(s.study_date, 'YYYYMMDD') AS study_date, s.accession_number, s.study_description,
              coalesce(s.modalities, counted.modalities) AS modalities, counted.series_count, counted.instance_count
         FROM (SELECT s.id, s.study_instance_uid, s.patient_name, s.patient_id, s.patient_birth_date, s.patient_sex,
                      s.study_date, s.created_at, s.accession_number, s.study_description, s.modalities
                 FROM studies s
                WHERE ${where.join(' AND ')}
                ORDER BY ${LIST_ORDER} LIMIT ${p.add(query.limit)} OFFSET ${p.add(query.offset)}) s
         CROSS JOIN LATERAL (
           SELECT count(*) AS series_count, coalesce(sum(se.instance_count), 0) AS instance_count,
                  array_agg(DISTINCT se.modality) FILTER (WHERE se.modality IS NOT NULL) AS modalities
             FROM series se WHERE se.study_id = s.id) counted
        ORDER BY ${LIST_ORDER}`,
      p.values,
    );
  }
}
