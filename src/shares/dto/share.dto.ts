import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsDefined } from 'class-validator';
import { IfPresent, IfPresentAndNotNull, NumberInRange, StringRules } from '../../common/validation/fields';

export const SHARE_DEFAULTS = { expires_in_hours: 168, max_uses: 20 } as const;

export class CreateShareDto {
  @ApiPropertyOptional({ minimum: 1, maximum: 720, default: SHARE_DEFAULTS.expires_in_hours })
  @IfPresent()
  @NumberInRange('expires_in_hours', 1, 720, { integer: true })
  expires_in_hours?: number;

  @ApiPropertyOptional({ minimum: 1, maximum: 1000, default: SHARE_DEFAULTS.max_uses })
  @IfPresent()
  @NumberInRange('max_uses', 1, 1000, { integer: true })
  max_uses?: number;

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    minLength: 6,
    maxLength: 64,
    description: 'Asked of the recipient before the study opens',
  })
  @IfPresentAndNotNull()
  @StringRules('passcode', { min: 6, max: 64 })
  passcode?: string | null;

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    maxLength: 255,
    description: 'For the clinic: who the link was given to, why',
  })
  @IfPresentAndNotNull()
  @StringRules('note', { max: 255 })
  note?: string | null;
}

export class OpenShareDto {
  @ApiProperty({ description: 'The token of the link (`/s/<token>`)' })
  @IsDefined({ message: 'The token field is required.' })
  @StringRules('token')
  token: string;

  // No length rule: a token or passcode of any length is only unknown (404) or wrong (401), never a
  // 422 (decisions.md 3d); the body limit bounds it, and the share's lock how many are hashed.
  @ApiPropertyOptional({ type: String, nullable: true, description: "The share's passcode, when it has one" })
  @IfPresentAndNotNull()
  @StringRules('passcode')
  passcode?: string | null;
}

export class ShareCreatorDto {
  @ApiProperty({ format: 'uuid' })
  id: string;
  @ApiProperty()
  name: string;
}

export class ShareDto {
  @ApiProperty({ format: 'uuid' })
  id: string;
  @ApiProperty({ format: 'date-time' })
  expires_at: string;
  @ApiProperty()
  max_uses: number;
  @ApiProperty()
  uses: number;
  @ApiProperty()
  has_passcode: boolean;
  @ApiProperty({ type: String, nullable: true })
  note: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true })
  last_used_at: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true })
  revoked_at: string | null;
  @ApiProperty({ type: ShareCreatorDto, nullable: true })
  created_by: ShareCreatorDto | null;
  @ApiProperty({ format: 'date-time' })
  created_at: string;
}

export class CreatedShareDto extends ShareDto {
  @ApiProperty({ description: 'Shown only in this answer: the archive keeps only its hash' })
  token: string;
  @ApiProperty({ example: '/s/<token>', description: "A path on the proxy's origin" })
  url: string;
}

export class SharedStudyDto {
  @ApiProperty()
  study_instance_uid: string;
  @ApiProperty()
  patient_name: string;
  @ApiProperty({ type: String, nullable: true, example: '2024-01-15' })
  study_date: string | null;
  @ApiProperty({ type: String, nullable: true })
  study_description: string | null;
  @ApiProperty({ type: [String] })
  modalities: string[];
}

export class OpenedShareDto {
  @ApiProperty({ format: 'uuid', description: 'Send as X-Viewer-Token: it reads this one study' })
  viewer_token: string;
  @ApiProperty({ example: 600 })
  expires_in: number;
  @ApiProperty({ type: SharedStudyDto })
  study: SharedStudyDto;
  @ApiProperty({ description: 'Whether the study has a final report' })
  has_report: boolean;
}
