import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsNotEmpty } from 'class-validator';
import { UuidValue } from '../../common/validation/fields';

export class IssueViewerTokenDto {
  @ApiProperty({ format: 'uuid', description: 'The study the viewer will open' })
  @IsNotEmpty({ message: 'The study_id field is required.' })
  @UuidValue('study_id')
  study_id: string;
}

export class ViewerTokenDto {
  @ApiProperty({ format: 'uuid', description: 'Send as header X-Viewer-Token on every DICOMweb request' })
  token: string;
  @ApiPropertyOptional({ example: 600, description: 'Seconds the token stays valid' })
  expires_in: number;
}
