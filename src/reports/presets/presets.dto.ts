import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsOptional } from 'class-validator';
import { SearchPageQueryDto } from '../../common/pagination';
import { PaginatedDto } from '../../common/responses';
import { IfPresentAndNotNull, StringRules, TrimmedString, UuidValue } from '../../common/validation/fields';
import { ReportSectionsDto } from '../dto/report.dto';

const MODALITY_MAX = 16;

/**
 * A modality as it is stored: trimmed and upper-cased (blank: any modality, null). Done before the
 * length check, as upper-casing can lengthen a value ('ß' -> 'SS').
 */
const normaliseModality = ({ value }: { value: unknown }) =>
  typeof value === 'string' ? value.trim().toUpperCase() || null : value;

class PresetFieldsDto extends ReportSectionsDto {
  @ApiPropertyOptional({ type: String, nullable: true, maxLength: MODALITY_MAX, description: 'e.g. CT; null: any modality' })
  @Transform(normaliseModality)
  @IfPresentAndNotNull()
  @StringRules('modality', { max: MODALITY_MAX })
  modality?: string | null;

  @ApiPropertyOptional({
    format: 'uuid',
    type: String,
    nullable: true,
    description: 'A unit of the clinic; null: the whole clinic',
  })
  @IfPresentAndNotNull()
  @UuidValue('unit id')
  unit_id?: string | null;
}

export class CreatePresetDto extends PresetFieldsDto {
  @ApiProperty({ maxLength: 255 })
  @TrimmedString('name', { max: 255 })
  name: string;
}

export class UpdatePresetDto extends PresetFieldsDto {
  @ApiPropertyOptional({ maxLength: 255 })
  @TrimmedString('name', { max: 255, optional: true })
  name?: string;
}

export class PresetListQueryDto extends SearchPageQueryDto {
  @ApiPropertyOptional({ maxLength: MODALITY_MAX, description: 'Presets of this modality and those of any modality' })
  @Transform(normaliseModality)
  @IsOptional()
  @StringRules('modality', { max: MODALITY_MAX })
  modality?: string | null;

  @ApiPropertyOptional({ format: 'uuid', description: 'A tenant or super admin: that unit’s presets and the clinic’s' })
  @IsOptional()
  @UuidValue('unit id')
  unit_id?: string;
}

export class PresetDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) tenant_id: string;
  @ApiProperty({ format: 'uuid', type: String, nullable: true, description: 'null: the whole clinic' }) unit_id: string | null;
  @ApiProperty() name: string;
  @ApiProperty({ type: String, nullable: true }) modality: string | null;
  @ApiProperty({ type: String, nullable: true }) indication: string | null;
  @ApiProperty({ type: String, nullable: true }) technique: string | null;
  @ApiProperty({ type: String, nullable: true }) findings: string | null;
  @ApiProperty({ type: String, nullable: true }) impression: string | null;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
}

export class PresetPageDto extends PaginatedDto(PresetDto, 'ReportPresetPage') {}

export interface PresetRow {
  id: string;
  tenant_id: string;
  unit_id: string | null;
  name: string;
  modality: string | null;
  indication: string | null;
  technique: string | null;
  findings: string | null;
  impression: string | null;
  created_at: Date;
  updated_at: Date;
}

export function toPresetDto(row: PresetRow): PresetDto {
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    unit_id: row.unit_id,
    name: row.name,
    modality: row.modality,
    indication: row.indication,
    technique: row.technique,
    findings: row.findings,
    impression: row.impression,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
