import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class DoorDecisionResponse {
  @ApiProperty({ description: 'True: the image server stores the instance' })
  allow: boolean;

  @ApiPropertyOptional({
    enum: ['replaces_instance', 'other_patient', 'unregistered_sender', 'other_clinic', 'quarantined_study'],
    description: 'Why it was refused',
  })
  reason?: string;

  @ApiPropertyOptional({ description: 'The refusal, as the image server logs it' })
  message?: string;
}
