import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional } from 'class-validator';
import { SearchPageQueryDto } from './pagination';
import { UuidValue } from './validation/fields';

/** `page`, `search` and the `tenant_id` filter. */
export class TenantFilterQueryDto extends SearchPageQueryDto {
  @ApiPropertyOptional({ format: 'uuid' })
  @IsOptional()
  @UuidValue('tenant id')
  tenant_id?: string;
}

/** `page`, `search` and the `tenant_id` and `unit_id` filters. */
export class TenantUnitFilterQueryDto extends TenantFilterQueryDto {
  @ApiPropertyOptional({ format: 'uuid' })
  @IsOptional()
  @UuidValue('unit id')
  unit_id?: string;
}
