import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDefined, IsNotEmpty } from 'class-validator';
import { StringRules, TrimmedString, trimString, UuidField } from '../../common/validation/fields';
import { NamedRefDto, PaginatedDto } from '../../common/responses';

/** DICOM's AE title repertoire: printable ASCII without the backslash. */
const AET_CHARACTERS = /^[\x20-\x5B\x5D-\x7E]+$/;

export class CreateModalityDto {
  @ApiProperty({ format: 'uuid' })
  @UuidField('tenant_id')
  tenant_id: string;

  @ApiProperty({ format: 'uuid', description: 'Must be a unit of tenant_id' })
  @UuidField('unit_id')
  unit_id: string;

  @ApiProperty({ maxLength: 255, example: 'CT Room 1' })
  @TrimmedString('name', { max: 255 })
  name: string;

  @ApiProperty({
    maxLength: 16,
    example: 'CT_ROOM1',
    description: 'Application Entity Title: trimmed and uppercased, unique across all clinics, at most 16 characters',
  })
  @Transform(({ value }) => (typeof value === 'string' ? value.trim().toUpperCase() : value))
  @IsDefined({ message: 'The aet field is required.' })
  @IsNotEmpty({ message: 'The aet field is required.' })
  @StringRules('aet', {
    max: 16,
    pattern: AET_CHARACTERS,
    patternMessage: 'The aet field may only contain printable ASCII characters other than a backslash.',
  })
  aet: string;

  @ApiProperty({ example: '10.8.0.12', description: 'Fixed IPv4 or IPv6 address of the device' })
  @Transform(trimString)
  @IsDefined({ message: 'The ip address field is required.' })
  @IsNotEmpty({ message: 'The ip address field is required.' })
  @StringRules('ip_address', { max: 45, ip: true })
  ip_address: string;
}

export class ModalityDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) tenant_id: string;
  @ApiProperty({ format: 'uuid' }) unit_id: string;
  @ApiProperty() name: string;
  @ApiProperty({ example: 'CT_ROOM1' }) aet: string;
  @ApiProperty({ example: '10.8.0.12' }) ip_address: string;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
  @ApiProperty({ type: NamedRefDto }) tenant: NamedRefDto;
  @ApiProperty({ type: NamedRefDto }) unit: NamedRefDto;
}

export class ModalityPageDto extends PaginatedDto(ModalityDto, 'ModalityPage') {}

export interface ModalityRow {
  id: string;
  tenant_id: string;
  unit_id: string;
  name: string;
  aet: string;
  ip_address: string;
  created_at: Date;
  updated_at: Date;
  tenant_name: string;
  unit_name: string;
}

export function toModalityDto(row: ModalityRow): ModalityDto {
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    unit_id: row.unit_id,
    name: row.name,
    aet: row.aet,
    ip_address: row.ip_address,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    tenant: { id: row.tenant_id, name: row.tenant_name },
    unit: { id: row.unit_id, name: row.unit_name },
  };
}
