import { ApiProperty } from '@nestjs/swagger';

export class WebhookQueuedResponse {
  @ApiProperty({ example: 'queued', enum: ['queued'] })
  status: 'queued';

  @ApiProperty({ description: 'The study id on the image server', example: '6b9e19d9-62094390-5f9ddb01-4a191ae7-9766b715' })
  ID: string;
}

export class WebhookErrorResponse {
  @ApiProperty({ example: 'Unauthorized' })
  error: string;
}
