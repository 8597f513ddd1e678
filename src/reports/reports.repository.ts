import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, SelectQueryBuilder } from 'typeorm';
import { Study, Tenant, User } from '../database/entities';
import { Report } from './report.entity';
import { ReportPdf } from './report-pdf.entity';
import { ReportTemplate } from '../tenant';
import type { ReportRow } from './dto/report.dto';
import type { SectionName } from './pdf/report-document';

export type SectionValues = Partial<Record<SectionName, string | null>>;

export interface NewReport extends SectionValues {
  study_id: string;
  tenant_id: string;
  unit_id: string;
  kind: 'report' | 'addendum';
  amends_id: string | null;
  template_id: string | null;
  author_id: string;
}

export interface Signing {
  signerId: string;
  signerName: string;
  signerCrm: string;
  signedAt: Date;
  layout: Record<string, unknown>;
  pdf: Buffer;
  /** The report whose PDF versions this signing adds to (the report itself, or the one an addendum amends). */
  pdfReportId: string;
}

/** Why a conditional write touched no row. */
export type WriteMiss = 'missing' | 'final' | 'stale';

export interface SignerRow {
  id: string;
  name: string;
  crm: string | null;
  signature: string | null;
}

export interface TemplateLetterhead {
  id: string;
  layout: Record<string, unknown>;
  page: Record<string, unknown>;
  assets: Record<string, unknown>;
}

export interface FilingTarget {
  pdf_id: string;
  data: Buffer;
  version: number;
  sop_instance_uid: string | null;
  filed_instance_id: string | null;
  study_id: string;
  imgsrv_study_id: string;
  signed_at: Date;
}

const REPORT_COLUMNS = [
  'r.id AS id',
  'r.study_id AS study_id',
  // The study's clinic and unit, not those kept at creation: a study released from quarantine moves.
  's.tenant_id AS tenant_id',
  's.unit_id AS unit_id',
  'r.kind AS kind',
  'r.amends_id AS amends_id',
  'r.status AS status',
  'r.indication AS indication',
  'r.technique AS technique',
  'r.findings AS findings',
  'r.impression AS impression',
  'r.template_id AS template_id',
  'r.version AS version',
  'r.author_id AS author_id',
  'a.name AS author_name',
  'r.signed_by_id AS signed_by_id',
  'r.signed_by_name AS signed_by_name',
  'r.signed_by_crm AS signed_by_crm',
  'r.signed_at AS signed_at',
  'r.signed_layout AS signed_layout',
  'r.created_at AS created_at',
  'r.updated_at AS updated_at',
];

/**
 * Reports, their kept PDFs and the study's report state. The caller has checked that the study is
 * in the caller's scope (StudiesRepository); every statement here is keyed by that study's id, so
 * a report of another study is not found. Each write that must not be lost to a concurrent one is
 * one conditional statement (`WHERE version = $v AND status = 'draft'`), not a read then a write.
 */
@Injectable()
export class ReportsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  private reports(manager: EntityManager = this.db.manager): SelectQueryBuilder<Report> {
    return manager
      .createQueryBuilder(Report, 'r')
      .innerJoin(User, 'a', 'a.id = r.author_id')
      .innerJoin(Study, 's', 's.id = r.study_id')
      .select(REPORT_COLUMNS);
  }

  listOfStudy(studyId: string): Promise<ReportRow[]> {
    return this.reports()
      .where('r.study_id = :studyId', { studyId })
      .orderBy('r.created_at', 'ASC')
      .addOrderBy('r.id', 'ASC')
      .getRawMany<ReportRow>();
  }

  async findInStudy(studyId: string, reportId: string, manager?: EntityManager): Promise<ReportRow | null> {
    const row = await this.reports(manager)
      .where('r.study_id = :studyId AND r.id = :reportId', { studyId, reportId })
      .getRawOne<ReportRow>();
    return row ?? null;
  }

  /** The study's final report (kind report), or null. */
  async findFinalReport(studyId: string): Promise<ReportRow | null> {
    const row = await this.reports()
      .where(`r.study_id = :studyId AND r.kind = 'report' AND r.status = 'final'`, { studyId })
      .getRawOne<ReportRow>();
    return row ?? null;
  }

  /** The signed addenda of a report, in signing order. */
  signedAddenda(reportId: string): Promise<ReportRow[]> {
    return this.reports()
      .where(`r.amends_id = :reportId AND r.status = 'final'`, { reportId })
      .orderBy('r.signed_at', 'ASC')
      .addOrderBy('r.id', 'ASC')
      .getRawMany<ReportRow>();
  }

  /**
   * Inserts the draft and marks the study `draft` (a study already `final` stays so: an addendum
   * does not undo its report), in one transaction. The partial unique indexes refuse a second
   * draft or a second report of the study (23505, mapped to 409 by the caller).
   */
  async createDraft(values: NewReport): Promise<string> {
    return this.db.transaction(async (manager) => {
      const inserted = await manager.createQueryBuilder().insert().into(Report).values(values).returning('id').execute();
      await manager
        .createQueryBuilder()
        .update(Study)
        .set({ report_status: 'draft', updated_at: () => 'now()' })
        .where(`id = :id AND report_status IS DISTINCT FROM 'final'`, { id: values.study_id })
        .execute();
      return (inserted.raw as Array<{ id: string }>)[0].id;
    });
  }

  /**
   * Applies the changes to a draft at `version`, in one statement: two saves made on the same
   * version cannot both pass. Null when no row matched (see whyMissed).
   */
  async updateDraft(
    studyId: string,
    reportId: string,
    version: number,
    changes: SectionValues & { template_id?: string | null },
  ): Promise<boolean> {
    const result = await this.db
      .createQueryBuilder()
      .update(Report)
      .set({ ...changes, version: () => 'version + 1', updated_at: () => 'now()' })
      .where(`id = :reportId AND study_id = :studyId AND version = :version AND status = 'draft'`, {
        reportId,
        studyId,
        version,
      })
      .execute();
    return (result.affected ?? 0) > 0;
  }

  /** Why a conditional write on a report touched nothing. */
  async whyMissed(studyId: string, reportId: string): Promise<WriteMiss> {
    const row = await this.db
      .createQueryBuilder(Report, 'r')
      .select('r.status', 'status')
      .where('r.study_id = :studyId AND r.id = :reportId', { studyId, reportId })
      .getRawOne<{ status: string }>();
    if (!row) return 'missing';
    return row.status === 'final' ? 'final' : 'stale';
  }

  /**
   * Deletes a draft and, when it was the study's report (not an addendum), puts the study back to
   * `pending`; one transaction. False when no draft matched.
   */
  async deleteDraft(studyId: string, reportId: string): Promise<boolean> {
    return this.db.transaction(async (manager) => {
      const deleted = await manager
        .createQueryBuilder()
        .delete()
        .from(Report)
        .where(`id = :reportId AND study_id = :studyId AND status = 'draft'`, { reportId, studyId })
        .returning(['kind'])
        .execute();
      const rows = deleted.raw as Array<{ kind: string }>;
      if (rows.length === 0) return false;
      if (rows[0].kind === 'report') {
        await manager
          .createQueryBuilder()
          .update(Study)
          .set({ report_status: 'pending', reported_at: null, reported_by_user_id: null, updated_at: () => 'now()' })
          .where('id = :studyId', { studyId })
          .execute();
      }
      return true;
    });
  }

  /**
   * Signs the draft at `version`: the report becomes final with its signer and letterhead, its PDF
   * is kept as the next version, and the study becomes `final` with reported_at/by: one
   * transaction. Returns the kept PDF's id, or null when no draft at that version matched.
   */
  async sign(studyId: string, reportId: string, version: number, signing: Signing): Promise<string | null> {
    return this.db.transaction(async (manager) => {
      const updated = await manager
        .createQueryBuilder()
        .update(Report)
        .set({
          status: 'final',
          signed_by_id: signing.signerId,
          signed_by_name: signing.signerName,
          signed_by_crm: signing.signerCrm,
          signed_at: signing.signedAt,
          signed_layout: signing.layout,
          version: () => 'version + 1',
          updated_at: () => 'now()',
        })
        .where(`id = :reportId AND study_id = :studyId AND version = :version AND status = 'draft'`, {
          reportId,
          studyId,
          version,
        })
        .execute();
      if ((updated.affected ?? 0) === 0) return null;
      // The next version of the report's PDF; the unique (report_id, version) refuses a race.
      const { next } = (await manager
        .createQueryBuilder(ReportPdf, 'p')
        .select('COALESCE(max(p.version), 0) + 1', 'next')
        .where('p.report_id = :reportId', { reportId: signing.pdfReportId })
        .getRawOne<{ next: number }>()) as { next: number };
      const inserted = await manager
        .createQueryBuilder()
        .insert()
        .into(ReportPdf)
        .values({ report_id: signing.pdfReportId, version: Number(next), signing_id: reportId, data: signing.pdf })
        .returning('id')
        .execute();
      await manager
        .createQueryBuilder()
        .update(Study)
        .set({
          report_status: 'final',
          reported_at: signing.signedAt,
          reported_by_user_id: signing.signerId,
          updated_at: () => 'now()',
        })
        .where('id = :studyId', { studyId })
        .execute();
      return (inserted.raw as Array<{ id: string }>)[0].id;
    });
  }

  /**
   * The kept PDF for a final report or addendum: for a report, its latest version; for an addendum,
   * the version its signing made. Null when none is kept.
   */
  async keptPdf(report: Pick<ReportRow, 'id' | 'kind'>): Promise<Buffer | null> {
    const qb = this.db.createQueryBuilder(ReportPdf, 'p').select('p.data', 'data');
    if (report.kind === 'report') qb.where('p.report_id = :id', { id: report.id }).orderBy('p.version', 'DESC');
    else qb.where('p.signing_id = :id', { id: report.id });
    const row = await qb.limit(1).getRawOne<{ data: Buffer }>();
    return row?.data ?? null;
  }

  findSigner(userId: string): Promise<SignerRow | null> {
    return this.db
      .createQueryBuilder(User, 'u')
      .select(['u.id AS id', 'u.name AS name', 'u.crm AS crm', 'u.signature AS signature'])
      .where('u.id = :userId', { userId })
      .getRawOne<SignerRow>()
      .then((row) => row ?? null);
  }

  async clinicLogo(tenantId: string): Promise<string | null> {
    const row = await this.db
      .createQueryBuilder(Tenant, 't')
      .select('t.logo', 'logo')
      .where('t.id = :tenantId', { tenantId })
      .getRawOne<{ logo: string | null }>();
    return row?.logo ?? null;
  }

  /** A live template of the clinic that is global or of the unit; null otherwise. */
  async findUsableTemplate(tenantId: string, unitId: string, templateId: string): Promise<TemplateLetterhead | null> {
    const row = await this.templates(tenantId, unitId)
      .andWhere('rt.id = :templateId', { templateId })
      .getRawOne<TemplateLetterhead>();
    return row ?? null;
  }

  /**
   * The unit's own active template, or null: a clinic's active global template is not the unit's
   * (as for GET /api/tenant/my-template); it is used only when asked for by id.
   */
  async findActiveTemplate(tenantId: string, unitId: string): Promise<TemplateLetterhead | null> {
    const row = await this.templates(tenantId, unitId)
      .andWhere('rt.unit_id = :unitId AND rt.is_active', { unitId })
      .getRawOne<TemplateLetterhead>();
    return row ?? null;
  }

  private templates(tenantId: string, unitId: string): SelectQueryBuilder<ReportTemplate> {
    return this.db
      .createQueryBuilder(ReportTemplate, 'rt')
      .select(['rt.id AS id', 'rt.layout AS layout', 'rt.page AS page', 'rt.assets AS assets'])
      .where('rt.deleted_at IS NULL AND rt.tenant_id = :tenantId AND (rt.unit_id = :unitId OR rt.unit_id IS NULL)', {
        tenantId,
        unitId,
      });
  }

  /** A kept PDF to file in the image server, with its study; null when gone. */
  async filingTarget(pdfId: string): Promise<FilingTarget | null> {
    const row = await this.db
      .createQueryBuilder(ReportPdf, 'p')
      .innerJoin(Report, 'r', 'r.id = p.report_id')
      .innerJoin(Report, 'sr', 'sr.id = p.signing_id')
      .innerJoin(Study, 's', 's.id = r.study_id')
      .select([
        'p.id AS pdf_id',
        'p.data AS data',
        'p.version AS version',
        'p.sop_instance_uid AS sop_instance_uid',
        'p.filed_instance_id AS filed_instance_id',
        's.id AS study_id',
        's.imgsrv_study_id AS imgsrv_study_id',
        'sr.signed_at AS signed_at',
      ])
      .where('p.id = :pdfId', { pdfId })
      .getRawOne<FilingTarget>();
    return row ?? null;
  }

  /** Kept PDFs not filed in the image server yet and older than `seconds`, oldest first (the filing sweep). */
  async unfiledPdfIds(seconds: number, limit: number): Promise<string[]> {
    const rows = await this.db
      .createQueryBuilder(ReportPdf, 'p')
      .select('p.id', 'id')
      .where('p.filed_instance_id IS NULL')
      .andWhere('p.created_at < now() - make_interval(secs => :seconds)', { seconds })
      .orderBy('p.created_at')
      .limit(limit)
      .getRawMany<{ id: string }>();
    return rows.map((row) => row.id);
  }

  /** Keeps the SOP Instance UID chosen for a PDF before it is sent (a retry sends the same instance). */
  async chooseSopInstanceUid(pdfId: string, uid: string): Promise<string> {
    const result = await this.db
      .createQueryBuilder()
      .update(ReportPdf)
      .set({ sop_instance_uid: () => 'COALESCE(sop_instance_uid, :uid)' })
      .setParameter('uid', uid)
      .where('id = :pdfId', { pdfId })
      .returning(['sop_instance_uid'])
      .execute();
    return (result.raw as Array<{ sop_instance_uid: string }>)[0]?.sop_instance_uid ?? uid;
  }

  async markFiled(pdfId: string, imgsrvInstanceId: string): Promise<void> {
    await this.db
      .createQueryBuilder()
      .update(ReportPdf)
      .set({ filed_instance_id: imgsrvInstanceId, filed_at: () => 'now()' })
      .where('id = :pdfId', { pdfId })
      .execute();
  }
}
