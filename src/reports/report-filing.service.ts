import { Injectable, Logger } from '@nestjs/common';
import { createHash } from 'crypto';
import { ImgsrvClient } from '../imgsrv';
import { ReportsRepository } from './reports.repository';

/** Encapsulated PDF Storage (PS3.4 B.5). */
export const ENCAPSULATED_PDF_SOP_CLASS = '1.2.840.10008.5.1.4.1.1.104.1';

/** A DICOM UID under the UUID root 2.25 (PS3.5 B.2), made from a digest of `seed`: the same seed, the same UID. */
export function uidFromSeed(seed: string): string {
  const digest = createHash('sha256').update(seed).digest().subarray(0, 16);
  return `2.25.${BigInt(`0x${digest.toString('hex')}`).toString()}`;
}

const dicomDate = (at: Date) => at.toISOString().slice(0, 10).replace(/-/g, '');
const dicomTime = (at: Date) => at.toISOString().slice(11, 19).replace(/:/g, '');

/**
 * The series of a study's kept PDF of `version` (1: the report as signed; n: with its first n - 1
 * signed addenda). Each version has its own series, so that a viewer, which lists a study's
 * documents by series description and number (OHIF: one entry per PDF), tells them apart:
 * "Report" 9901, "Report, addendum 1" 9902, ... The UID is derived from the study and the version
 * (a retry lands in the same series); version 1 keeps the study-only seed that reports already
 * filed carry, so such a PDF filed again makes the same instance.
 */
export function reportSeries(studyId: string, version: number) {
  return {
    SeriesInstanceUID: uidFromSeed(version === 1 ? `report-series:${studyId}` : `report-series:${studyId}:${version}`),
    SeriesDescription: version === 1 ? 'Report' : `Report, addendum ${version - 1}`,
    SeriesNumber: String(9900 + version),
  };
}

/**
 * Files a kept report PDF in the image server as a DICOM Encapsulated PDF under the study, in the
 * `DOC` series of its version (reportSeries). The instance's UID is chosen once and kept, so a
 * retry stores the same instance; a PDF already filed is not sent again. The webhook brings the new
 * instance back to ingestion, which re-indexes the study; an instance written through REST carries
 * no device, and the study keeps its clinic and unit (ingestion places a study by the instances its
 * devices sent).
 */
@Injectable()
export class ReportFilingService {
  private readonly logger = new Logger('ReportFiling');

  constructor(
    private readonly reports: ReportsRepository,
    private readonly imgsrv: ImgsrvClient,
  ) {}

  async run(pdfId: string): Promise<{ outcome: 'gone' | 'filed' | 'already-filed'; imgsrvInstanceId?: string }> {
    const target = await this.reports.filingTarget(pdfId);
    if (!target) return { outcome: 'gone' };
    if (target.filed_instance_id) return { outcome: 'already-filed', imgsrvInstanceId: target.filed_instance_id };
    const sopInstanceUid = await this.reports.chooseSopInstanceUid(pdfId, uidFromSeed(`report-pdf:${pdfId}`));
    const signedAt = new Date(target.signed_at);
    const created = await this.imgsrv.createDicom(
      target.imgsrv_study_id,
      {
        SOPClassUID: ENCAPSULATED_PDF_SOP_CLASS,
        SOPInstanceUID: sopInstanceUid,
        ...reportSeries(target.study_id, target.version),
        Modality: 'DOC',
        InstanceNumber: String(target.version),
        DocumentTitle: `Report (version ${target.version})`,
        ContentDate: dicomDate(signedAt),
        ContentTime: dicomTime(signedAt),
        MIMETypeOfEncapsulatedDocument: 'application/pdf',
        ConversionType: 'WSD',
      },
      `data:application/pdf;base64,${Buffer.from(target.data).toString('base64')}`,
    );
    await this.reports.markFiled(pdfId, created.ID);
    this.logger.log(`report PDF ${pdfId} (version ${target.version}) filed as instance ${created.ID}`);
    return { outcome: 'filed', imgsrvInstanceId: created.ID };
  }
}
