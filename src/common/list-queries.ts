import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsOptional, IsUUID } from 'class-validator';
import { SearchPageQueryDto } from './pagination';
import { lowercaseUuid } from './validation/fields';

/** `page`, `search` and the `tenant_id` filter. */
export class TenantFilterQueryDto extends SearchPageQueryDto {
  @ApiPropertyOptional({ format: 'uuid' })
  @IsOptional()
  @Transform(lowercaseUuid)
  @IsUUID('all', { message: 'The tenant id field must be a valid UUID.' })
  tenant_id?: string;
}

/** `page`, `search` and the `tenant_id` and `unit_id` filters. */
export class TenantUnitFilterQueryDto extends TenantFilterQueryDto {
  @ApiPropertyOptional({ format: 'uuid' })
  @IsOptional()
  @Transform(lowercaseUuid)
  @IsUUID('all', { message: 'The unit id field must be a valid UUID.' })
  unit_id?: string;
}
