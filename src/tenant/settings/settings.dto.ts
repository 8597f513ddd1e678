import { ApiProperty } from '@nestjs/swagger';
import { IsDefined, ValidateIf } from 'class-validator';
import { IsImageDataUrl, LOGO_MAX_BYTES } from '../../common/validation/image-data-url';

export class UpdateSettingsDto {
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'data:image/jpeg;base64,... or data:image/png;base64,... (at most 2 MiB decoded); null removes the logo',
  })
  // Required key: absent is refused, null is the explicit way to remove the logo.
  @ValidateIf((_object, value) => value !== null)
  @IsDefined({ message: 'The logo field is required.' })
  @IsImageDataUrl({ maxBytes: LOGO_MAX_BYTES })
  logo: string | null;
}

export class SettingsDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty({ type: String, nullable: true }) logo: string | null;
}
