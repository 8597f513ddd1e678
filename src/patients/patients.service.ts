import { Injectable } from '@nestjs/common';
import { DataScope } from '../common/auth/data-scope';
import { Errors } from '../common/errors/api-errors';
import { pageOffset, paginated, Paginated } from '../common/pagination';
import { Patient } from '../database/entities';
import { StudyDto, StudiesService } from '../studies';
import { PatientDto, toPatientDto } from './dto/patient.responses';
import { PatientsRepository } from './patients.repository';

export const PATIENTS_PER_PAGE = 20;

@Injectable()
export class PatientsService {
  constructor(
    private readonly patients: PatientsRepository,
    private readonly studyReads: StudiesService,
  ) {}

  async list(scope: DataScope, search: string | undefined, pageNumber?: number): Promise<Paginated<PatientDto>> {
    const { page, offset } = pageOffset(pageNumber, PATIENTS_PER_PAGE);
    const { rows, total, exact } = await this.patients.listPatients(scope, search, offset, PATIENTS_PER_PAGE);
    return paginated(rows.map(toPatientDto), total, page, PATIENTS_PER_PAGE, exact);
  }

  async detail(scope: DataScope, id: string): Promise<PatientDto> {
    const patient = await this.patients.findPatient(scope, id);
    if (!patient) throw Errors.notFound('Patient');
    return toPatientDto(patient);
  }

  /** The patient's studies the caller may see (a unit-scoped caller: only those of the unit), and the patient. */
  async studies(scope: DataScope, id: string, pageNumber?: number): Promise<{ patient: Patient; page: Paginated<StudyDto> }> {
    const patient = await this.patients.findPatient(scope, id);
    if (!patient) throw Errors.notFound('Patient');
    return { patient, page: await this.studyReads.list(scope, { patientUuid: id }, pageNumber) };
  }
}
