import { LAST_PAGE_DESCRIPTION, TOTAL_DESCRIPTION, TOTAL_EXACT_DESCRIPTION } from '../../common/responses';
import { ApiProperty, OmitType } from '@nestjs/swagger';
import type { Instance, Patient, ReportStatus, Series, Study, Tenant, Unit } from '../../database/entities';

const iso = (value: Date | null | undefined): string | null => (value ? value.toISOString() : null);

export class PatientDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) tenant_id: string;
  @ApiProperty() patient_id: string;
  @ApiProperty() patient_name: string;
  @ApiProperty({ type: String, format: 'date', nullable: true }) patient_birth_date: string | null;
  @ApiProperty({ type: String, enum: ['M', 'F'], nullable: true }) patient_sex: 'M' | 'F' | null;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
}

export class StudyDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) tenant_id: string;
  @ApiProperty({ format: 'uuid' }) unit_id: string;
  @ApiProperty({ type: String, format: 'uuid', nullable: true }) patient_uuid: string | null;
  @ApiProperty() imgsrv_study_id: string;
  @ApiProperty() study_instance_uid: string;
  @ApiProperty() patient_id: string;
  @ApiProperty() patient_name: string;
  @ApiProperty({ type: String, format: 'date', nullable: true }) patient_birth_date: string | null;
  @ApiProperty({ type: String, enum: ['M', 'F'], nullable: true }) patient_sex: 'M' | 'F' | null;
  @ApiProperty({ type: String, nullable: true }) accession_number: string | null;
  @ApiProperty({ format: 'date' }) study_date: string;
  @ApiProperty({ type: String, nullable: true }) study_description: string | null;
  @ApiProperty({ type: [String], nullable: true, example: ['CT'] }) modalities: string[] | null;
  @ApiProperty({ type: String, enum: ['pending', 'draft', 'final'], nullable: true }) report_status: ReportStatus | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) reported_at: string | null;
  @ApiProperty({ type: String, format: 'uuid', nullable: true }) reported_by_user_id: string | null;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
}

export class StudyUnitDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) tenant_id: string;
  @ApiProperty() name: string;
}

export class StudyTenantDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() name: string;
}

export class StudyDetailDto extends OmitType(StudyDto, ['modalities'] as const) {
  @ApiProperty({ type: [String], example: ['CT', 'SR'], description: 'Computed from the series when not stored' })
  modalities: string[];
  @ApiProperty({ type: PatientDto, nullable: true }) patient: PatientDto | null;
  @ApiProperty({ type: StudyUnitDto }) unit: StudyUnitDto;
  @ApiProperty({ type: StudyTenantDto }) tenant: StudyTenantDto;
}

export class SeriesDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) study_id: string;
  @ApiProperty() imgsrv_series_id: string;
  @ApiProperty() series_instance_uid: string;
  @ApiProperty() modality: string;
  @ApiProperty() series_number: number;
  @ApiProperty({ type: String, nullable: true }) manufacturer: string | null;
  @ApiProperty() instance_count: number;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
}

export class InstanceDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) series_id: string;
  @ApiProperty() imgsrv_instance_id: string;
  @ApiProperty() sop_instance_uid: string;
  @ApiProperty() instance_number: number;
  @ApiProperty({ type: Number, nullable: true, description: 'null for instances without pixel data' }) rows: number | null;
  @ApiProperty({ type: Number, nullable: true }) columns: number | null;
  @ApiProperty({ type: Number, nullable: true }) slice_thickness: number | null;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
}

export class StudyPageDto {
  @ApiProperty({ type: [StudyDto] }) data: StudyDto[];
  @ApiProperty() current_page: number;
  @ApiProperty({ example: 15 }) per_page: number;
  @ApiProperty({ description: TOTAL_DESCRIPTION }) total: number;
  @ApiProperty({ description: LAST_PAGE_DESCRIPTION }) last_page: number;
  @ApiProperty({ description: TOTAL_EXACT_DESCRIPTION }) total_exact: boolean;
}

export class NotReadyDto {
  @ApiProperty({ example: 'Thumbnail not ready' }) message: string;
}

export function toPatientDto(p: Patient): PatientDto {
  return {
    id: p.id,
    tenant_id: p.tenant_id,
    patient_id: p.patient_id,
    patient_name: p.patient_name,
    patient_birth_date: p.patient_birth_date,
    patient_sex: p.patient_sex,
    created_at: p.created_at.toISOString(),
    updated_at: p.updated_at.toISOString(),
  };
}

export function toStudyDto(s: Study): StudyDto {
  return {
    id: s.id,
    tenant_id: s.tenant_id,
    unit_id: s.unit_id,
    patient_uuid: s.patient_uuid,
    imgsrv_study_id: s.imgsrv_study_id,
    study_instance_uid: s.study_instance_uid,
    patient_id: s.patient_id,
    patient_name: s.patient_name,
    patient_birth_date: s.patient_birth_date,
    patient_sex: s.patient_sex,
    accession_number: s.accession_number,
    study_date: s.study_date,
    study_description: s.study_description,
    modalities: s.modalities,
    report_status: s.report_status,
    reported_at: iso(s.reported_at),
    reported_by_user_id: s.reported_by_user_id,
    created_at: s.created_at.toISOString(),
    updated_at: s.updated_at.toISOString(),
  };
}

export function toStudyDetailDto(s: Study & { unit: Unit; tenant: Tenant }, modalities: string[]): StudyDetailDto {
  return {
    ...toStudyDto(s),
    modalities,
    patient: s.patient ? toPatientDto(s.patient) : null,
    unit: { id: s.unit.id, tenant_id: s.unit.tenant_id, name: s.unit.name },
    tenant: { id: s.tenant.id, name: s.tenant.name },
  };
}

export function toSeriesDto(s: Series): SeriesDto {
  return {
    id: s.id,
    study_id: s.study_id,
    imgsrv_series_id: s.imgsrv_series_id,
    series_instance_uid: s.series_instance_uid,
    modality: s.modality,
    series_number: s.series_number,
    manufacturer: s.manufacturer,
    instance_count: s.instance_count,
    created_at: s.created_at.toISOString(),
    updated_at: s.updated_at.toISOString(),
  };
}

export function toInstanceDto(i: Instance): InstanceDto {
  return {
    id: i.id,
    series_id: i.series_id,
    imgsrv_instance_id: i.imgsrv_instance_id,
    sop_instance_uid: i.sop_instance_uid,
    instance_number: i.instance_number,
    rows: i.rows,
    columns: i.columns,
    slice_thickness: i.slice_thickness,
    created_at: i.created_at.toISOString(),
    updated_at: i.updated_at.toISOString(),
  };
}
