import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsDefined } from 'class-validator';
import { OptionalBoolean, TrimmedString } from '../../common/validation/fields';
import type { Tenant } from '../../database/entities';
import { PaginatedDto } from '../../common/responses';
import { SlugField, timestampsOf } from '../../clinics';

export class CreateTenantDto {
  @ApiProperty({ maxLength: 255, example: 'Clínica São Paulo' })
  @TrimmedString('name', { max: 255 })
  name: string;

  @SlugField('Normalised to a lowercase hyphenated slug; derived from the name when absent or null.', 'clinica-sao-paulo')
  slug?: string | null;

  @ApiPropertyOptional({ default: true })
  @OptionalBoolean('is_active')
  is_active?: boolean;
}

export class TenantStatusDto {
  @ApiProperty({ description: 'The new state; units of the tenant follow it.' })
  @IsDefined({ message: 'The is active field is required.' })
  @IsBoolean({ message: 'The is active field must be true or false.' })
  is_active: boolean;
}

export class TenantDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty() slug: string;
  @ApiProperty() is_active: boolean;
  @ApiProperty({ type: String, nullable: true, description: 'data:image/jpeg|png;base64,... or null' })
  logo: string | null;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
}

export class TenantPageDto extends PaginatedDto(TenantDto, 'TenantPage') {}

export function toTenantDto(tenant: Tenant): TenantDto {
  return {
    id: tenant.id,
    name: tenant.name,
    slug: tenant.slug,
    is_active: tenant.is_active,
    logo: tenant.logo,
    ...timestampsOf(tenant),
  };
}
