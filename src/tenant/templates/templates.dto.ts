import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsDefined, IsIn, IsObject, IsString } from 'class-validator';
import { PaginatedDto } from '../../common/responses';
import { TenantUnitFilterQueryDto } from '../../common/list-queries';
import {
  IfPresent,
  IfPresentAndNotNull,
  NestedObject,
  NumberInRange,
  OptionalBoolean,
  TrimmedString,
  UuidField,
  UuidValue,
} from '../../common/validation/fields';
import { BACKGROUND_MAX_BYTES, IsImageDataUrl } from '../../common/validation/image-data-url';

export class TemplateBackgroundDto {
  @ApiProperty({ description: 'data:image/jpeg;base64,... or data:image/png;base64,... (at most 5 MiB decoded)' })
  @IsDefined({ message: 'The data url field is required.' })
  @IsImageDataUrl({ maxBytes: BACKGROUND_MAX_BYTES, label: 'background image' })
  data_url: string;

  @ApiPropertyOptional({ minimum: 0, maximum: 1, default: 1 })
  @IfPresent()
  @NumberInRange('opacity', 0, 1)
  opacity?: number;
}

export class TemplateAssetsDto {
  @ApiPropertyOptional({ type: TemplateBackgroundDto, nullable: true, description: 'Letterhead background; null removes it' })
  @IfPresentAndNotNull()
  @NestedObject('background', () => TemplateBackgroundDto)
  background?: TemplateBackgroundDto | null;
}

const LAYOUT_DOC = { type: 'object', additionalProperties: true, description: 'Regions, slots and typography' } as const;
const PAGE_DOC = { type: 'object', additionalProperties: true, description: 'Page configuration' } as const;

/** The fields shared by create and update (all optional here). */
class TemplateFieldsDto {
  @ApiPropertyOptional({ type: String, nullable: true, description: 'Free text' })
  @IfPresentAndNotNull()
  @IsString({ message: 'The content field must be a string.' })
  content?: string | null;

  @ApiPropertyOptional({ enum: [1], default: 1 })
  @IfPresent()
  @IsIn([1], { message: 'The selected schema version is invalid (only 1 is accepted).' })
  schema_version?: number;

  @ApiPropertyOptional({ ...LAYOUT_DOC, nullable: true })
  @IfPresentAndNotNull()
  @IsObject({ message: 'The layout field must be an object.' })
  layout?: Record<string, unknown> | null;

  @ApiPropertyOptional({ ...PAGE_DOC, nullable: true })
  @IfPresentAndNotNull()
  @IsObject({ message: 'The page field must be an object.' })
  page?: Record<string, unknown> | null;

  @ApiPropertyOptional({ type: TemplateAssetsDto, nullable: true })
  @IfPresentAndNotNull()
  @NestedObject('assets', () => TemplateAssetsDto)
  assets?: TemplateAssetsDto | null;

  @ApiPropertyOptional({
    default: true,
    description: 'true makes every other template of the same unit (or the other global ones) inactive',
  })
  @OptionalBoolean('is_active')
  is_active?: boolean;
}

export class CreateTemplateDto extends TemplateFieldsDto {
  @ApiProperty({ maxLength: 255 })
  @TrimmedString('name', { max: 255 })
  name: string;

  @ApiProperty({ format: 'uuid', description: 'A unit of the caller’s clinic' })
  @UuidField('unit_id')
  unit_id: string;
}

export class UpdateTemplateDto extends TemplateFieldsDto {
  @ApiPropertyOptional({ maxLength: 255 })
  @TrimmedString('name', { max: 255, optional: true })
  name?: string;

  @ApiPropertyOptional({
    format: 'uuid',
    type: String,
    nullable: true,
    description: 'null makes the template global to the clinic',
  })
  @IfPresentAndNotNull()
  @UuidValue('unit id')
  unit_id?: string | null;
}

export class TemplateListQueryDto extends TenantUnitFilterQueryDto {}

export class TemplateDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) tenant_id: string;
  @ApiProperty({ format: 'uuid', type: String, nullable: true, description: 'null: global to the clinic' }) unit_id:
    string | null;
  @ApiProperty() name: string;
  @ApiProperty({ type: String, nullable: true }) content: string | null;
  @ApiProperty({ example: 1 }) schema_version: number;
  @ApiProperty(LAYOUT_DOC) layout: Record<string, unknown>;
  @ApiProperty(PAGE_DOC) page: Record<string, unknown>;
  @ApiProperty({ type: TemplateAssetsDto }) assets: Record<string, unknown>;
  @ApiProperty() is_active: boolean;
  @ApiProperty({ type: String, nullable: true }) unit_name: string | null;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
}

export class TemplatePageDto extends PaginatedDto(TemplateDto, 'TemplatePage') {}

export interface TemplateRow {
  id: string;
  tenant_id: string;
  unit_id: string | null;
  name: string;
  content: string | null;
  schema_version: number;
  layout: Record<string, unknown>;
  page: Record<string, unknown>;
  assets: Record<string, unknown>;
  is_active: boolean;
  unit_name: string | null;
  created_at: Date;
  updated_at: Date;
}

export function toTemplateDto(row: TemplateRow): TemplateDto {
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    unit_id: row.unit_id,
    name: row.name,
    content: row.content,
    schema_version: row.schema_version,
    layout: row.layout,
    page: row.page,
    assets: row.assets,
    is_active: row.is_active,
    unit_name: row.unit_name,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
