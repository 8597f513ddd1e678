import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsISO8601, IsOptional, IsString, MaxLength } from 'class-validator';
import { PageQueryDto } from '../../common/pagination';
import { UuidValue } from '../../common/validation/fields';
import { ACCESS_ACTIONS, AccessAction } from '../audit.service';

const ISO_8601 = 'must be an ISO 8601 date or date-time.';

/** GET /api/audit/access: the filters of decisions.md 3e, `page`, and `format`. */
export class AccessTrailQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ description: 'The DICOM Patient ID', maxLength: 64 })
  @IsOptional()
  @IsString({ message: 'The patient_id field must be a string.' })
  @MaxLength(64, { message: 'The patient_id field must not be greater than 64 characters.' })
  patient_id?: string;

  @ApiPropertyOptional({ format: 'uuid' })
  @IsOptional()
  @UuidValue('study_id')
  study_id?: string;

  @ApiPropertyOptional({ format: 'uuid' })
  @IsOptional()
  @UuidValue('user_id')
  user_id?: string;

  @ApiPropertyOptional({ format: 'uuid', description: 'Super admin only (a tenant admin always reads their clinic)' })
  @IsOptional()
  @UuidValue('tenant_id')
  tenant_id?: string;

  @ApiPropertyOptional({ enum: ACCESS_ACTIONS })
  @IsOptional()
  @IsIn(ACCESS_ACTIONS, { message: `The action field must be one of: ${ACCESS_ACTIONS.join(', ')}.` })
  action?: AccessAction;

  @ApiPropertyOptional({ description: 'ISO 8601; entries at or after', example: '2026-11-01T00:00:00Z' })
  @IsOptional()
  @IsISO8601({ strict: true }, { message: `The from field ${ISO_8601}` })
  from?: string;

  @ApiPropertyOptional({ description: 'ISO 8601; entries at or before', example: '2026-11-30T23:59:59Z' })
  @IsOptional()
  @IsISO8601({ strict: true }, { message: `The to field ${ISO_8601}` })
  to?: string;

  @ApiPropertyOptional({ enum: ['json', 'csv'], default: 'json' })
  @IsOptional()
  @IsIn(['json', 'csv'], { message: 'The format field must be json or csv.' })
  format?: 'json' | 'csv';
}

export class AccessTrailUserDto {
  @ApiProperty({ format: 'uuid' })
  id: string;
  @ApiProperty()
  name: string;
}

export class AccessTrailEntryDto {
  @ApiProperty({ example: '1024', description: 'Increasing in the order entries were written' })
  id: string;
  @ApiProperty({ format: 'date-time' })
  at: string;
  @ApiProperty({ enum: ACCESS_ACTIONS })
  action: string;
  @ApiProperty({ type: AccessTrailUserDto, nullable: true, description: "null for a share's reader" })
  user: AccessTrailUserDto | null;
  @ApiProperty({ type: String, format: 'uuid', nullable: true })
  share_id: string | null;
  @ApiProperty({ type: String, format: 'uuid', nullable: true })
  tenant_id: string | null;
  @ApiProperty({ type: String, format: 'uuid', nullable: true })
  study_id: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'The DICOM Patient ID' })
  patient_id: string | null;
  @ApiProperty({ type: String, nullable: true })
  ip: string | null;
  @ApiProperty({
    type: 'integer',
    nullable: true,
    description: 'study.search: how many studies it returned (never the search text)',
  })
  count: number | null;
}

export class AccessTrailPageDto {
  @ApiProperty({ type: [AccessTrailEntryDto] })
  data: AccessTrailEntryDto[];
  @ApiProperty()
  current_page: number;
  @ApiProperty({ example: 50 })
  per_page: number;
  @ApiProperty()
  total: number;
  @ApiProperty()
  last_page: number;
  @ApiProperty({ example: true })
  total_exact: boolean;
}
