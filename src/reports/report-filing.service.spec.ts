import { Logger } from '@nestjs/common';
import { ENCAPSULATED_PDF_SOP_CLASS, ReportFilingService, uidFromSeed } from './report-filing.service';

/** The filing of one kept PDF of `version`, with what it sent to the image server. */
async function file(version: number) {
  const sent: Array<{ parent: string; tags: Record<string, string>; content: string }> = [];
  const reports = {
    filingTarget: async (pdfId: string) => ({
      pdf_id: pdfId,
      data: Buffer.from('%PDF-1.7 report'),
      version,
      sop_instance_uid: null,
      filed_instance_id: null,
      study_id: 'study-1',
      imgsrv_study_id: 'orthanc-study-1',
      signed_at: new Date('2026-11-26T13:45:10Z'),
    }),
    chooseSopInstanceUid: async (_pdfId: string, uid: string) => uid,
    markFiled: async () => undefined,
  };
  const imgsrv = {
    createDicom: async (parent: string, tags: Record<string, string>, content: string) => {
      sent.push({ parent, tags, content });
      return { ID: `instance-${version}` };
    },
  };
  const filing = new ReportFilingService(reports as never, imgsrv as never);
  expect(await filing.run(`pdf-${version}`)).toEqual({ outcome: 'filed', imgsrvInstanceId: `instance-${version}` });
  expect(sent).toHaveLength(1);
  return sent[0];
}

describe('ReportFilingService: the DICOM fields of a filed report PDF', () => {
  beforeAll(() => jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined));
  afterAll(() => jest.restoreAllMocks());

  it('files the report as signed as an Encapsulated PDF of modality DOC under the study, in series "Report" 9901', async () => {
    const { parent, tags, content } = await file(1);
    expect(parent).toBe('orthanc-study-1');
    expect(tags).toMatchObject({
      SOPClassUID: ENCAPSULATED_PDF_SOP_CLASS,
      SOPInstanceUID: uidFromSeed('report-pdf:pdf-1'),
      // The series UID of every PDF filed before addenda got series of their own: a PDF filed again
      // lands on the instance it made then.
      SeriesInstanceUID: uidFromSeed('report-series:study-1'),
      Modality: 'DOC',
      SeriesDescription: 'Report',
      SeriesNumber: '9901',
      InstanceNumber: '1',
      MIMETypeOfEncapsulatedDocument: 'application/pdf',
    });
    expect(content).toBe(`data:application/pdf;base64,${Buffer.from('%PDF-1.7 report').toString('base64')}`);
  });

  it('files each version an addendum makes in a series of its own that a viewer tells apart: its description names the addendum, its number follows', async () => {
    const [first, second, third] = [await file(1), await file(2), await file(3)];
    // A viewer lists a study's documents by series description and number (OHIF: one entry per PDF).
    expect([first, second, third].map(({ tags }) => [tags.SeriesDescription, tags.SeriesNumber])).toEqual([
      ['Report', '9901'],
      ['Report, addendum 1', '9902'],
      ['Report, addendum 2', '9903'],
    ]);
    const seriesUids = [first, second, third].map(({ tags }) => tags.SeriesInstanceUID);
    expect(new Set(seriesUids).size).toBe(3);
    // The same version of the same study: the same series (a retry stores the same instance).
    expect((await file(2)).tags.SeriesInstanceUID).toBe(second.tags.SeriesInstanceUID);
    for (const { tags } of [first, second, third]) {
      expect(tags.SeriesInstanceUID).toMatch(/^2\.25\.(0|[1-9][0-9]*)$/);
      expect(tags.SeriesInstanceUID.length).toBeLessThanOrEqual(64);
      // LO: at most 64 characters.
      expect(tags.SeriesDescription.length).toBeLessThanOrEqual(64);
    }
    expect(third.tags).toMatchObject({ Modality: 'DOC', InstanceNumber: '3', DocumentTitle: 'Report (version 3)' });
  });
});
