import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsDefined } from 'class-validator';
import { IfPresent, IfPresentAndNotNull, OneMessage, StringRules, UuidValue } from '../../common/validation/fields';

/** Each section's limit (decisions §3c); the database checks it too. */
export const SECTION_MAX_LENGTH = 20_000;

const sectionDoc = (description: string) =>
  ({ type: String, nullable: true, maxLength: SECTION_MAX_LENGTH, description }) as const;

/** A report section: a string of at most 20,000 characters, or null. */
const Section = (field: string) => [IfPresentAndNotNull(), StringRules(field, { max: SECTION_MAX_LENGTH })];
const apply =
  (decorators: PropertyDecorator[]): PropertyDecorator =>
  (target, key) =>
    decorators.forEach((decorate) => decorate(target, key));

/** The four sections, each optional (null clears it). */
export class ReportSectionsDto {
  @ApiPropertyOptional(sectionDoc('Clinical indication'))
  @apply(Section('indication'))
  indication?: string | null;

  @ApiPropertyOptional(sectionDoc('Technique'))
  @apply(Section('technique'))
  technique?: string | null;

  @ApiPropertyOptional(sectionDoc('Findings'))
  @apply(Section('findings'))
  findings?: string | null;

  @ApiPropertyOptional(sectionDoc('Impression'))
  @apply(Section('impression'))
  impression?: string | null;
}

/** POST /reports and /addenda: any of the sections and the template. */
export class CreateReportDto extends ReportSectionsDto {
  @ApiPropertyOptional({
    format: 'uuid',
    type: String,
    nullable: true,
    description: 'A template of the study’s clinic (of its unit or global); absent: the unit’s active template',
  })
  @IfPresentAndNotNull()
  @UuidValue('template id')
  template_id?: string | null;
}

/** A version: one message for one mistake (a string "1" is not an integer, not also "too large"). */
const Version = () =>
  apply([
    IsDefined({ message: 'The version field is required.' }),
    OneMessage('version', (value) => {
      if (typeof value !== 'number' || !Number.isInteger(value)) return 'The version field must be an integer.';
      if (value < 1) return 'The version field must be at least 1.';
      if (value > 2_147_483_647) return 'The version field is too large.';
      return null;
    }),
  ]);

/** PATCH: the changes and the version they were made on. */
export class UpdateReportDto extends CreateReportDto {
  @ApiProperty({ minimum: 1, description: 'The version the edit was made on; another one is 409' })
  @Version()
  version: number;
}

export class SignReportDto {
  @ApiProperty({ minimum: 1, description: 'The version that is being signed; another one is 409' })
  @Version()
  version: number;
}

export class UserRefDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() name: string;
}

export class SignerDto extends UserRefDto {
  @ApiProperty({ type: String, nullable: true, description: 'The CRM as it was at signing' }) crm: string | null;
}

export class ReportDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) study_id: string;
  @ApiProperty({ format: 'uuid' }) tenant_id: string;
  @ApiProperty({ format: 'uuid' }) unit_id: string;
  @ApiProperty({ enum: ['report', 'addendum'] }) kind: 'report' | 'addendum';
  @ApiProperty({ format: 'uuid', type: String, nullable: true, description: 'For an addendum: the final report' })
  amends_id: string | null;
  @ApiProperty({ enum: ['draft', 'final'] }) status: 'draft' | 'final';
  @ApiProperty(sectionDoc('Clinical indication')) indication: string | null;
  @ApiProperty(sectionDoc('Technique')) technique: string | null;
  @ApiProperty(sectionDoc('Findings')) findings: string | null;
  @ApiProperty(sectionDoc('Impression')) impression: string | null;
  @ApiProperty({ format: 'uuid', type: String, nullable: true }) template_id: string | null;
  @ApiProperty({ example: 1 }) version: number;
  @ApiProperty({ type: UserRefDto }) author: UserRefDto;
  @ApiProperty({ type: SignerDto, nullable: true }) signed_by: SignerDto | null;
  @ApiProperty({ format: 'date-time', type: String, nullable: true }) signed_at: string | null;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
}

export class ConflictDto {
  @ApiProperty({ example: 'The report was changed since version 3: reload it before saving.' }) message: string;
}

/** A report row with its author's name, as the repository reads it. */
export interface ReportRow {
  id: string;
  study_id: string;
  tenant_id: string;
  unit_id: string;
  kind: 'report' | 'addendum';
  amends_id: string | null;
  status: 'draft' | 'final';
  indication: string | null;
  technique: string | null;
  findings: string | null;
  impression: string | null;
  template_id: string | null;
  version: number;
  author_id: string;
  author_name: string;
  signed_by_id: string | null;
  signed_by_name: string | null;
  signed_by_crm: string | null;
  signed_at: Date | null;
  signed_layout: Record<string, unknown> | null;
  created_at: Date;
  updated_at: Date;
}

export function toReportDto(row: ReportRow): ReportDto {
  return {
    id: row.id,
    study_id: row.study_id,
    tenant_id: row.tenant_id,
    unit_id: row.unit_id,
    kind: row.kind,
    amends_id: row.amends_id,
    status: row.status,
    indication: row.indication,
    technique: row.technique,
    findings: row.findings,
    impression: row.impression,
    template_id: row.template_id,
    version: row.version,
    author: { id: row.author_id, name: row.author_name },
    signed_by: row.signed_by_id ? { id: row.signed_by_id, name: row.signed_by_name ?? '', crm: row.signed_by_crm } : null,
    signed_at: row.signed_at ? row.signed_at.toISOString() : null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
