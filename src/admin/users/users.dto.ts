import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { Equals, IsDefined, IsNotEmpty, ValidateIf } from 'class-validator';
import { Identity, identityOf } from '../../common/auth/auth-user';
import { IsCrm } from '../../common/validation/crm';
import {
  IfPresent,
  IfPresentAndNotNull,
  OptionalBoolean,
  StringRules,
  TrimmedString,
  UuidField,
} from '../../common/validation/fields';
import { IsImageDataUrl, SIGNATURE_MAX_BYTES } from '../../common/validation/image-data-url';
import { NamedRefDto, PaginatedDto } from '../../common/responses';

const normaliseEmail = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim().toLowerCase() : value);

const SIGNATURE_DOC = {
  type: String,
  nullable: true,
  description:
    'data:image/jpeg;base64,... or data:image/png;base64,... (at most 2 MiB decoded); never returned, see has_signature',
} as const;

export class CreateUserDto {
  @ApiProperty({ format: 'uuid' })
  @UuidField('tenant_id')
  tenant_id: string;

  @ApiProperty({ format: 'uuid', description: 'Must be a unit of tenant_id' })
  @UuidField('unit_id')
  unit_id: string;

  @ApiProperty({ maxLength: 255 })
  @TrimmedString('name', { max: 255 })
  name: string;

  @ApiProperty({ maxLength: 255, description: 'Stored lowercase; unique across all clinics' })
  @Transform(normaliseEmail)
  @IsDefined({ message: 'The email field is required.' })
  @IsNotEmpty({ message: 'The email field is required.' })
  @StringRules('email', { max: 255, email: true })
  email: string;

  @ApiProperty({ minLength: 8, description: 'At least 8 characters, at most 72 bytes (bcrypt)' })
  @IsDefined({ message: 'The password field is required.' })
  @StringRules('password', { min: 8, maxBytes: 72 })
  password: string;

  @ApiPropertyOptional({ type: String, nullable: true, example: '123456/SP', description: 'NNNN/SS to NNNNNN/SS' })
  @IfPresentAndNotNull()
  @IsCrm()
  crm?: string | null;

  @ApiPropertyOptional(SIGNATURE_DOC)
  @IfPresentAndNotNull()
  @IsImageDataUrl({ maxBytes: SIGNATURE_MAX_BYTES })
  signature?: string | null;

  @ApiPropertyOptional({ default: false })
  @OptionalBoolean('is_tenant_admin')
  is_tenant_admin?: boolean;

  @ApiPropertyOptional({ default: true })
  @OptionalBoolean('is_active')
  is_active?: boolean;
}

/** Every field optional; `password` is refused (no admin password reset); crm and signature may be null. */
export class UpdateUserDto {
  @ApiPropertyOptional({ format: 'uuid' })
  @UuidField('tenant_id', { optional: true })
  tenant_id?: string;

  @ApiPropertyOptional({ format: 'uuid', description: 'Must be a unit of the (new or current) tenant' })
  @UuidField('unit_id', { optional: true })
  unit_id?: string;

  @ApiPropertyOptional({ maxLength: 255 })
  @TrimmedString('name', { max: 255, optional: true })
  name?: string;

  @ApiPropertyOptional({ maxLength: 255 })
  @Transform(normaliseEmail)
  @IfPresent()
  @IsNotEmpty({ message: 'The email field must not be empty.' })
  @StringRules('email', { max: 255, email: true })
  email?: string;

  @ApiPropertyOptional({ type: String, nullable: true, example: '123456/SP' })
  @IfPresentAndNotNull()
  @IsCrm()
  crm?: string | null;

  @ApiPropertyOptional(SIGNATURE_DOC)
  @IfPresentAndNotNull()
  @IsImageDataUrl({ maxBytes: SIGNATURE_MAX_BYTES })
  signature?: string | null;

  @ApiPropertyOptional()
  @OptionalBoolean('is_tenant_admin')
  is_tenant_admin?: boolean;

  @ApiPropertyOptional()
  @OptionalBoolean('is_active')
  is_active?: boolean;

  /** Declared only to be refused: silently ignoring it would let an admin believe it changed. */
  @ValidateIf((_object, value) => value !== undefined)
  @Equals(undefined, { message: 'The password cannot be changed through this endpoint.' })
  password?: never;
}

export class AdminUserDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() email: string;
  @ApiProperty() name: string;
  @ApiProperty({ format: 'uuid', type: String, nullable: true }) tenant_id: string | null;
  @ApiProperty({ format: 'uuid', type: String, nullable: true }) unit_id: string | null;
  @ApiProperty() is_super_admin: boolean;
  @ApiProperty() is_tenant_admin: boolean;
  @ApiProperty() is_active: boolean;
  @ApiProperty({ type: String, nullable: true, example: '123456/SP' }) crm: string | null;
  @ApiProperty({ description: 'Whether a signature image is stored (the image itself is never returned)' })
  has_signature: boolean;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
  @ApiProperty({ type: NamedRefDto, nullable: true }) tenant: NamedRefDto | null;
  @ApiProperty({ type: NamedRefDto, nullable: true }) unit: NamedRefDto | null;
}

export class AdminUserPageDto extends PaginatedDto(AdminUserDto, 'AdminUserPage') {}

export interface AdminUserRow extends Identity {
  is_active: boolean;
  crm: string | null;
  has_signature: boolean;
  created_at: Date;
  updated_at: Date;
  tenant_name: string | null;
  unit_name: string | null;
}

/** The only way a user leaves the admin API: no password, remember_token or signature. */
export function toAdminUserDto(row: AdminUserRow): AdminUserDto {
  return {
    ...identityOf(row),
    is_active: row.is_active,
    crm: row.crm,
    has_signature: row.has_signature,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    tenant: row.tenant_id && row.tenant_name !== null ? { id: row.tenant_id, name: row.tenant_name } : null,
    unit: row.unit_id && row.unit_name !== null ? { id: row.unit_id, name: row.unit_name } : null,
  };
}
