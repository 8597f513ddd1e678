import { Body, Controller, Delete, Get, HttpCode, Patch, Post, Res } from '@nestjs/common';
import {
  ApiBody,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiProduces,
  ApiTags,
  ApiUnprocessableEntityResponse,
} from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { AuditAccess } from '../audit';
import type { AuthUser } from '../common/auth/auth-user';
import { DataScope } from '../common/auth/data-scope';
import { Auth, CallerScope, CurrentUser } from '../common/auth/decorators';
import { FairShare } from '../common/fair-share/fair-share.interceptor';
import { UuidParam } from '../common/http/uuid-param';
import { NotFoundDto, ValidationErrorDto } from '../common/responses';
import { ConflictDto, CreateReportDto, ReportDto, SignReportDto, UpdateReportDto } from './dto/report.dto';
import { ReportsService } from './reports.service';

const STUDY_OR_REPORT_NOT_FOUND =
  'The study is missing or outside the caller’s scope: `{message: "Study not found."}`; the report is not one of ' +
  'the study’s: `{message: "Report not found."}`';
const STUDY_NOT_FOUND = 'The study is missing or outside the caller’s scope: `{message: "Study not found."}`';

/** A study's reports and addenda (decisions §3c). Whoever sees the study reads and writes them. */
@ApiTags('reports')
@Controller('studies/:id/reports')
export class ReportsController {
  constructor(private readonly reports: ReportsService) {}

  @Get()
  @Auth()
  @AuditAccess('report.read')
  @ApiOperation({ summary: 'The study’s reports and addenda, oldest first (not paginated)' })
  @ApiOkResponse({ type: [ReportDto] })
  @ApiNotFoundResponse({ type: NotFoundDto, description: STUDY_NOT_FOUND })
  list(@CallerScope() scope: DataScope, @UuidParam('id', 'Study') studyId: string): Promise<ReportDto[]> {
    return this.reports.list(scope, studyId);
  }

  @Post()
  @Auth()
  @AuditAccess('report.write')
  @ApiOperation({ summary: 'Start the study’s report: a draft; the study becomes `draft`' })
  @ApiBody({ type: CreateReportDto })
  @ApiCreatedResponse({ type: ReportDto })
  @ApiNotFoundResponse({ type: NotFoundDto, description: STUDY_NOT_FOUND })
  @ApiConflictResponse({ type: ConflictDto, description: 'The study already has a draft or a final report' })
  @ApiUnprocessableEntityResponse({ type: ValidationErrorDto, description: 'Validation; errors.template_id' })
  create(
    @CurrentUser() user: AuthUser,
    @CallerScope() scope: DataScope,
    @UuidParam('id', 'Study') studyId: string,
    @Body() body: CreateReportDto,
  ): Promise<ReportDto> {
    return this.reports.create(user, scope, studyId, body);
  }

  @Get(':reportId')
  @Auth()
  @AuditAccess('report.read', { targetParam: 'reportId' })
  @ApiOperation({ summary: 'One report or addendum of the study' })
  @ApiOkResponse({ type: ReportDto })
  @ApiNotFoundResponse({ type: NotFoundDto, description: STUDY_OR_REPORT_NOT_FOUND })
  get(
    @CallerScope() scope: DataScope,
    @UuidParam('id', 'Study') studyId: string,
    @UuidParam('reportId', 'Report') reportId: string,
  ): Promise<ReportDto> {
    return this.reports.get(scope, studyId, reportId);
  }

  @Patch(':reportId')
  @Auth()
  @AuditAccess('report.write', { targetParam: 'reportId' })
  @ApiOperation({ summary: 'Change a draft (sections, template) made on `version`; answers the new version' })
  @ApiBody({ type: UpdateReportDto })
  @ApiOkResponse({ type: ReportDto })
  @ApiNotFoundResponse({ type: NotFoundDto, description: STUDY_OR_REPORT_NOT_FOUND })
  @ApiConflictResponse({ type: ConflictDto, description: 'A stale `version` (changed by someone else), or a final report' })
  @ApiUnprocessableEntityResponse({ type: ValidationErrorDto, description: 'Validation; errors.version, errors.template_id' })
  update(
    @CallerScope() scope: DataScope,
    @UuidParam('id', 'Study') studyId: string,
    @UuidParam('reportId', 'Report') reportId: string,
    @Body() body: UpdateReportDto,
  ): Promise<ReportDto> {
    return this.reports.update(scope, studyId, reportId, body);
  }

  @Delete(':reportId')
  @HttpCode(204)
  @Auth()
  @AuditAccess('report.write', { targetParam: 'reportId' })
  @ApiOperation({ summary: 'Delete a draft; the study goes back to `pending` (stays `final` for an addendum)' })
  @ApiNoContentResponse({ description: 'Deleted; no body' })
  @ApiNotFoundResponse({ type: NotFoundDto, description: STUDY_OR_REPORT_NOT_FOUND })
  @ApiConflictResponse({ type: ConflictDto, description: 'A final report is never deleted' })
  async remove(
    @CallerScope() scope: DataScope,
    @UuidParam('id', 'Study') studyId: string,
    @UuidParam('reportId', 'Report') reportId: string,
  ): Promise<void> {
    await this.reports.remove(scope, studyId, reportId);
  }

  @Post(':reportId/sign')
  @HttpCode(200)
  @Auth()
  @AuditAccess('report.sign', { targetParam: 'reportId' })
  @ApiOperation({
    summary: 'Sign a draft at `version`: it becomes final, its PDF is kept, the study becomes `final`',
    description: 'The signed PDF is filed with the study’s images (a DICOM Encapsulated PDF in a DOC series) within 60 s.',
  })
  @ApiBody({ type: SignReportDto })
  @ApiOkResponse({ type: ReportDto })
  @ApiNotFoundResponse({ type: NotFoundDto, description: STUDY_OR_REPORT_NOT_FOUND })
  @ApiConflictResponse({ type: ConflictDto, description: 'A stale `version`, or a report already final' })
  @ApiUnprocessableEntityResponse({
    type: ValidationErrorDto,
    description:
      "errors.crm: the signer has no CRM; errors.findings/impression: both empty; errors.template_id: the draft's template was deleted or moved out of the study's unit since; errors.version",
  })
  sign(
    @CurrentUser() user: AuthUser,
    @CallerScope() scope: DataScope,
    @UuidParam('id', 'Study') studyId: string,
    @UuidParam('reportId', 'Report') reportId: string,
    @Body() body: SignReportDto,
  ): Promise<ReportDto> {
    return this.reports.sign(user, scope, studyId, reportId, body.version);
  }

  @Post(':reportId/addenda')
  @Auth()
  @AuditAccess('report.write', { targetParam: 'reportId' })
  @ApiOperation({ summary: 'Start an addendum to the final report: a draft of kind `addendum`' })
  @ApiBody({ type: CreateReportDto })
  @ApiCreatedResponse({ type: ReportDto })
  @ApiNotFoundResponse({ type: NotFoundDto, description: STUDY_OR_REPORT_NOT_FOUND })
  @ApiConflictResponse({ type: ConflictDto, description: 'The report is not a final report, or the study already has a draft' })
  @ApiUnprocessableEntityResponse({ type: ValidationErrorDto, description: 'Validation; errors.template_id' })
  addendum(
    @CurrentUser() user: AuthUser,
    @CallerScope() scope: DataScope,
    @UuidParam('id', 'Study') studyId: string,
    @UuidParam('reportId', 'Report') reportId: string,
    @Body() body: CreateReportDto,
  ): Promise<ReportDto> {
    return this.reports.addAddendum(user, scope, studyId, reportId, body);
  }

  @Get(':reportId/pdf')
  @Auth()
  @FairShare()
  @AuditAccess('report.read', { targetParam: 'reportId' })
  @ApiOperation({
    summary: 'The report as an A4 PDF',
    description:
      'A final report: the PDF kept at its latest signing (the report as signed, then its signed addenda, each dated); ' +
      'a final addendum: the version its signing kept; a draft: rendered now with DRAFT on every page.',
  })
  @ApiProduces('application/pdf')
  @ApiOkResponse({ description: 'application/pdf', schema: { type: 'string', format: 'binary' } })
  @ApiNotFoundResponse({ type: NotFoundDto, description: STUDY_OR_REPORT_NOT_FOUND })
  async pdf(
    @CallerScope() scope: DataScope,
    @UuidParam('id', 'Study') studyId: string,
    @UuidParam('reportId', 'Report') reportId: string,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Buffer> {
    const pdf = await this.reports.pdf(scope, studyId, reportId);
    reply
      .header('content-type', 'application/pdf')
      .header('content-disposition', `inline; filename="report-${reportId}.pdf"`)
      .header('cache-control', 'private, no-store');
    return pdf;
  }
}
