import { Controller, Get, Query, Req } from '@nestjs/common';
import { ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags, ApiUnprocessableEntityResponse } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { accessedPatient, AuditAccess } from '../audit';
import { DataScope } from '../common/auth/data-scope';
import { Auth, CallerScope } from '../common/auth/decorators';
import { FairShare } from '../common/fair-share/fair-share.interceptor';
import { UuidParam } from '../common/http/uuid-param';
import { PageQueryDto, Paginated, SearchPageQueryDto } from '../common/pagination';
import { StudyDto, StudyPageDto } from '../studies';
import { PatientDto, PatientPageDto } from './dto/patient.responses';
import { PatientsService } from './patients.service';

@ApiTags('patients')
@Controller('patients')
export class PatientsController {
  constructor(private readonly patients: PatientsService) {}

  @Get()
  @Auth()
  @AuditAccess('patient.search', { search: true })
  @FairShare({ patternParams: ['search'], searchesOnly: true })
  @ApiOperation({ summary: 'Patients visible to the caller, 20 per page, by name' })
  @ApiOkResponse({ type: PatientPageDto })
  @ApiUnprocessableEntityResponse({ description: 'Invalid page, or search over 255 characters' })
  list(@CallerScope() scope: DataScope, @Query() query: SearchPageQueryDto): Promise<Paginated<PatientDto>> {
    return this.patients.list(scope, query.search, query.page);
  }

  @Get(':id')
  @Auth()
  @AuditAccess('patient.view', { patientFromAnswer: true })
  @ApiOperation({ summary: 'A patient' })
  @ApiOkResponse({ type: PatientDto })
  @ApiNotFoundResponse({
    description: 'Missing, another tenant\'s, or (regular user) without a study in the unit: `{message: "Patient not found."}`',
  })
  detail(@CallerScope() scope: DataScope, @UuidParam('id', 'Patient') id: string): Promise<PatientDto> {
    return this.patients.detail(scope, id);
  }

  @Get(':id/studies')
  @Auth()
  @AuditAccess('study.search', { search: true, patientFromAnswer: true })
  @ApiOperation({ summary: "The patient's studies visible to the caller, 15 per page" })
  @ApiOkResponse({ type: StudyPageDto })
  @ApiNotFoundResponse({ description: '`{message: "Patient not found."}`' })
  @ApiUnprocessableEntityResponse({ description: 'Invalid page' })
  async studies(
    @CallerScope() scope: DataScope,
    @UuidParam('id', 'Patient') id: string,
    @Query() query: PageQueryDto,
    @Req() request: FastifyRequest,
  ): Promise<Paginated<StudyDto>> {
    const { patient, page } = await this.patients.studies(scope, id, query.page);
    // The trail names the patient even when the page is empty (past the end, or a patient without studies).
    accessedPatient(request, patient);
    return page;
  }
}
