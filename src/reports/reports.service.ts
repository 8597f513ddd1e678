import { Logger, HttpStatus, Injectable } from '@nestjs/common';
import type { AuthUser } from '../common/auth/auth-user';
import { DataScope } from '../common/auth/data-scope';
import { ApiError, Errors } from '../common/errors/api-errors';
import { uniqueViolationOf } from '../common/validation/unique-violation';
import { StudiesRepository } from '../studies';
import { CreateReportDto, ReportDto, ReportRow, toReportDto, UpdateReportDto } from './dto/report.dto';
import { PdfRenderPool } from './pdf/pdf-render.pool';
import {
  ReportDocument,
  ReportLetterhead,
  ReportPart,
  ReportSignature,
  SECTION_NAMES,
  SectionName,
} from './pdf/report-document';
import { ReportFilingQueue } from './report-filing.queue';
import { ReportsRepository, SectionValues } from './reports.repository';

export const TEMPLATE_INVALID = 'The selected template id is invalid.';
export const CRM_REQUIRED = 'A CRM is required on the signer’s account to sign a report.';
export const CONTENT_REQUIRED = 'The findings or the impression must be filled in before signing.';

const conflict = (message: string) => new ApiError(HttpStatus.CONFLICT, { message });
export const Conflicts = {
  final: () => conflict('The report is final and cannot be changed: add an addendum instead.'),
  stale: () => conflict('The report was changed by someone else since this version: reload it before saving.'),
  draftExists: () => conflict('The study already has a draft: edit or delete it first.'),
  reportExists: () => conflict('The study already has a report: add an addendum to its final report.'),
  notFinal: () => conflict('Addenda are added to a final report only.'),
};

type StudyDetail = NonNullable<Awaited<ReturnType<StudiesRepository['findStudyDetail']>>>;

/** What a signed report keeps in `signed_layout`: its letterhead (a report only) and the signature image. */
interface SignedLayout {
  letterhead?: ReportLetterhead;
  signature: string | null;
}

const sections = (source: Partial<Record<SectionName, string | null>>): SectionValues => {
  const values: SectionValues = {};
  for (const name of SECTION_NAMES) if (source[name] !== undefined) values[name] = source[name];
  return values;
};
const filled = (value: string | null) => typeof value === 'string' && value.trim() !== '';

/**
 * Reports and addenda of a study (decisions §3c). Whoever sees the study reads and writes its
 * reports; the study is looked up in the caller's scope first, so a study outside it is
 * `Study not found.` and a report of another study `Report not found.`.
 */
@Injectable()
export class ReportsService {
  private readonly logger = new Logger('Reports');

  constructor(
    private readonly studies: StudiesRepository,
    private readonly reports: ReportsRepository,
    private readonly renderer: PdfRenderPool,
    private readonly filing: ReportFilingQueue,
  ) {}

  private async study(scope: DataScope, studyId: string): Promise<StudyDetail> {
    const study = await this.studies.findStudyDetail(scope, studyId);
    if (!study) throw Errors.notFound('Study');
    return study;
  }

  private async report(studyId: string, reportId: string): Promise<ReportRow> {
    const report = await this.reports.findInStudy(studyId, reportId);
    if (!report) throw Errors.notFound('Report');
    return report;
  }

  async list(scope: DataScope, studyId: string): Promise<ReportDto[]> {
    await this.study(scope, studyId);
    return (await this.reports.listOfStudy(studyId)).map(toReportDto);
  }

  async get(scope: DataScope, studyId: string, reportId: string): Promise<ReportDto> {
    await this.study(scope, studyId);
    return toReportDto(await this.report(studyId, reportId));
  }

  async create(user: AuthUser, scope: DataScope, studyId: string, body: CreateReportDto): Promise<ReportDto> {
    const study = await this.study(scope, studyId);
    const existing = await this.reports.listOfStudy(studyId);
    if (existing.some((r) => r.status === 'draft')) throw Conflicts.draftExists();
    if (existing.some((r) => r.kind === 'report')) throw Conflicts.reportExists();
    return this.insert(user, study, body, null);
  }

  async addAddendum(
    user: AuthUser,
    scope: DataScope,
    studyId: string,
    reportId: string,
    body: CreateReportDto,
  ): Promise<ReportDto> {
    const study = await this.study(scope, studyId);
    const report = await this.report(studyId, reportId);
    if (report.kind !== 'report' || report.status !== 'final') throw Conflicts.notFinal();
    return this.insert(user, study, body, report.id);
  }

  private async insert(user: AuthUser, study: StudyDetail, body: CreateReportDto, amendsId: string | null): Promise<ReportDto> {
    const templateId = await this.templateFor(study, body.template_id);
    try {
      const id = await this.reports.createDraft({
        study_id: study.id,
        tenant_id: study.tenant_id,
        unit_id: study.unit_id,
        kind: amendsId ? 'addendum' : 'report',
        amends_id: amendsId,
        template_id: templateId,
        author_id: user.id,
        ...sections(body),
      });
      return toReportDto(await this.report(study.id, id));
    } catch (error) {
      // Two concurrent creations: the partial unique indexes let one through.
      const index = uniqueViolationOf(error);
      if (index === 'reports_one_draft_per_study') throw Conflicts.draftExists();
      if (index === 'reports_one_report_per_study') throw Conflicts.reportExists();
      throw error;
    }
  }

  /** The given template when usable for the study (422 otherwise); absent: the unit's own active one, or null. */
  private async templateFor(study: StudyDetail, templateId: string | null | undefined): Promise<string | null> {
    if (templateId === null) return null;
    if (templateId === undefined) return (await this.reports.findActiveTemplate(study.tenant_id, study.unit_id))?.id ?? null;
    const template = await this.reports.findUsableTemplate(study.tenant_id, study.unit_id, templateId);
    if (!template) throw Errors.fieldInvalid('template_id', TEMPLATE_INVALID);
    return template.id;
  }

  async update(scope: DataScope, studyId: string, reportId: string, body: UpdateReportDto): Promise<ReportDto> {
    const study = await this.study(scope, studyId);
    const report = await this.report(studyId, reportId);
    if (report.status === 'final') throw Conflicts.final();
    const changes: SectionValues & { template_id?: string | null } = sections(body);
    if (body.template_id !== undefined) changes.template_id = await this.templateFor(study, body.template_id);
    // The version counts accepted changes: a save that changes nothing must not make another doctor's save stale.
    if (Object.entries(changes).every(([field, value]) => report[field as keyof typeof changes] === value)) {
      if (report.version !== body.version) throw Conflicts.stale();
      return toReportDto(report);
    }
    if (!(await this.reports.updateDraft(studyId, reportId, body.version, changes))) await this.missed(studyId, reportId);
    return toReportDto(await this.report(studyId, reportId));
  }

  async remove(scope: DataScope, studyId: string, reportId: string): Promise<void> {
    await this.study(scope, studyId);
    const report = await this.report(studyId, reportId);
    if (report.status === 'final') throw Conflicts.final();
    if (!(await this.reports.deleteDraft(studyId, reportId))) await this.missed(studyId, reportId);
  }

  /** Turns a conditional write that matched nothing into its error. */
  private async missed(studyId: string, reportId: string): Promise<never> {
    const why = await this.reports.whyMissed(studyId, reportId);
    if (why === 'missing') throw Errors.notFound('Report');
    throw why === 'final' ? Conflicts.final() : Conflicts.stale();
  }

  /**
   * Signs a draft: its PDF is rendered now (on the render threads) and kept with the signature in
   * one transaction, and the worker files it in the image server afterwards.
   */
  async sign(user: AuthUser, scope: DataScope, studyId: string, reportId: string, version: number): Promise<ReportDto> {
    const study = await this.study(scope, studyId);
    const report = await this.report(studyId, reportId);
    if (report.status === 'final') throw Conflicts.final();
    if (report.version !== version) throw Conflicts.stale();
    const signer = await this.reports.findSigner(user.id);
    if (!signer?.crm) throw Errors.fieldInvalid('crm', CRM_REQUIRED);
    if (!filled(report.findings) && !filled(report.impression)) {
      throw Errors.validation({ findings: [CONTENT_REQUIRED], impression: [CONTENT_REQUIRED] });
    }
    const signedAt = new Date();
    const signature: ReportSignature = {
      name: signer.name,
      crm: signer.crm,
      at: signedAt.toISOString(),
      image: signer.signature,
    };
    let document: ReportDocument;
    let layout: SignedLayout;
    let pdfReportId: string;
    if (report.kind === 'report') {
      const letterhead = await this.letterhead(study, report.template_id, { signing: true });
      layout = { letterhead, signature: signer.signature };
      document = { letterhead, parts: [{ ...partOf(report), signed: signature }], draft: false };
      pdfReportId = report.id;
    } else {
      const amended = await this.report(studyId, report.amends_id as string);
      const addenda = await this.reports.signedAddenda(amended.id);
      layout = { signature: signer.signature };
      document = {
        letterhead: keptLetterhead(amended),
        parts: [signedPart(amended), ...addenda.map(signedPart), { ...partOf(report), signed: signature }],
        draft: false,
      };
      pdfReportId = amended.id;
    }
    const pdf = await this.renderer.render(document);
    const pdfId = await this.reports.sign(studyId, reportId, version, {
      signerId: signer.id,
      signerName: signer.name,
      signerCrm: signer.crm,
      signedAt,
      layout: layout as unknown as Record<string, unknown>,
      pdf,
      pdfReportId,
    });
    if (!pdfId) await this.missed(studyId, reportId);
    // The report is signed: a queue that fails now must not turn that into an error. The worker's
    // sweep files a PDF its job never got (ReportFilingWorker).
    await this.filing.fileReportPdf(pdfId as string).catch((error: Error) => {
      this.logger.warn(`report PDF ${pdfId} not queued for filing (the sweep will file it): ${error?.message}`);
    });
    return toReportDto(await this.report(studyId, reportId));
  }

  /**
   * The PDF: a final report's (or addendum's) kept bytes; a draft rendered now on the current
   * letterhead with DRAFT on every page (a draft addendum after the report as signed).
   */
  async pdf(scope: DataScope, studyId: string, reportId: string): Promise<Buffer> {
    const study = await this.study(scope, studyId);
    const report = await this.report(studyId, reportId);
    if (report.status === 'final') {
      const kept = await this.reports.keptPdf(report);
      if (kept) return kept;
      throw Errors.notFound('Report PDF');
    }
    if (report.kind === 'report') {
      const letterhead = await this.letterhead(study, report.template_id);
      return this.renderer.render({ letterhead, parts: [partOf(report)], draft: true });
    }
    const amended = await this.report(studyId, report.amends_id as string);
    const addenda = await this.reports.signedAddenda(amended.id);
    return this.renderer.render({
      letterhead: keptLetterhead(amended),
      parts: [signedPart(amended), ...addenda.map(signedPart), partOf(report)],
      draft: true,
    });
  }

  /** The kept PDF of the study's final report (with its signed addenda), or null when it has none. */
  async keptFinalPdf(studyId: string): Promise<Buffer | null> {
    const report = await this.reports.findFinalReport(studyId);
    return report ? this.reports.keptPdf(report) : null;
  }

  /**
   * The letterhead as it is now: the template's layout and background, the clinic's logo, the header.
   * A draft's template deleted or moved out of its unit since: a preview prints without it, a signing
   * is refused (422 errors.template_id), as a signed PDF is never printed again.
   */
  private async letterhead(
    study: StudyDetail,
    templateId: string | null,
    options = { signing: false },
  ): Promise<ReportLetterhead> {
    const template = templateId ? await this.reports.findUsableTemplate(study.tenant_id, study.unit_id, templateId) : null;
    if (templateId && !template && options.signing) throw Errors.fieldInvalid('template_id', TEMPLATE_INVALID);
    const background = (template?.assets as { background?: { data_url?: unknown; opacity?: unknown } } | undefined)?.background;
    return {
      clinic_name: study.tenant.name,
      unit_name: study.unit.name,
      logo: await this.reports.clinicLogo(study.tenant_id),
      layout: template?.layout ?? {},
      page: template?.page ?? {},
      background:
        background && typeof background.data_url === 'string'
          ? { data_url: background.data_url, opacity: typeof background.opacity === 'number' ? background.opacity : 1 }
          : null,
      patient: {
        name: study.patient_name,
        id: study.patient_id,
        birth_date: study.patient_birth_date,
        sex: study.patient_sex,
      },
      study: {
        date: study.study_date,
        description: study.study_description,
        accession_number: study.accession_number,
        modalities: study.modalities ?? (await this.studies.seriesModalities(study.id)),
      },
    };
  }
}

function partOf(report: ReportRow): ReportPart {
  return {
    kind: report.kind,
    indication: report.indication,
    technique: report.technique,
    findings: report.findings,
    impression: report.impression,
    signed: null,
  };
}

/** A final report or addendum as it was signed (its name and CRM then, its signature image then). */
function signedPart(report: ReportRow): ReportPart {
  const kept = (report.signed_layout ?? {}) as Partial<SignedLayout>;
  return {
    ...partOf(report),
    signed: {
      name: report.signed_by_name ?? '',
      crm: report.signed_by_crm,
      at: (report.signed_at as Date).toISOString(),
      image: kept.signature ?? null,
    },
  };
}

function keptLetterhead(report: ReportRow): ReportLetterhead {
  const kept = (report.signed_layout ?? {}) as Partial<SignedLayout>;
  if (!kept.letterhead) throw new Error(`report ${report.id} is final without its letterhead`);
  return kept.letterhead;
}
