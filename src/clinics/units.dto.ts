import { ApiProperty } from '@nestjs/swagger';
import { TrimmedString, UuidField } from '../common/validation/fields';
import type { Unit } from '../database/entities';
import { PaginatedDto } from '../common/responses';
import { SlugField, timestampsOf } from './clinic-fields';

export class CreateUnitDto {
  @ApiProperty({ format: 'uuid' })
  @UuidField('tenant_id')
  tenant_id: string;

  @ApiProperty({ maxLength: 255, example: 'Centro' })
  @TrimmedString('name', { max: 255 })
  name: string;

  @SlugField('Globally unique; normalised to a lowercase hyphenated slug. Absent or null: no slug.')
  slug?: string | null;
}

export class UnitDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) tenant_id: string;
  @ApiProperty() name: string;
  @ApiProperty({ type: String, nullable: true }) slug: string | null;
  @ApiProperty() is_active: boolean;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
}

export class UnitPageDto extends PaginatedDto(UnitDto, 'UnitPage') {}

export function toUnitDto(unit: Unit): UnitDto {
  return {
    id: unit.id,
    tenant_id: unit.tenant_id,
    name: unit.name,
    slug: unit.slug,
    is_active: unit.is_active,
    ...timestampsOf(unit),
  };
}
