import { ApiProperty } from '@nestjs/swagger';

export class SessionUserDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() email: string;
  @ApiProperty() name: string;
  @ApiProperty({ format: 'uuid', nullable: true, type: String }) tenant_id: string | null;
  @ApiProperty({ format: 'uuid', nullable: true, type: String }) unit_id: string | null;
  @ApiProperty() is_super_admin: boolean;
  @ApiProperty() is_tenant_admin: boolean;
}

export class SessionDto {
  @ApiProperty({ description: 'The JWT; also set as httpOnly cookie pacs_access_token' })
  access_token: string;
  @ApiProperty({ example: 'bearer' }) token_type: 'bearer';
  @ApiProperty({ example: 3600 }) expires_in: number;
  @ApiProperty({ type: SessionUserDto }) user: SessionUserDto;
}

class NamedRefDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() name: string;
}

export class MeDto extends SessionUserDto {
  @ApiProperty({ type: NamedRefDto, nullable: true }) tenant: NamedRefDto | null;
  @ApiProperty({ type: NamedRefDto, nullable: true }) unit: NamedRefDto | null;
}

export class MessageDto {
  @ApiProperty() message: string;
}
