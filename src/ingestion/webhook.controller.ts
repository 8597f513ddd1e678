import { Body, Controller, Headers, HttpCode, Post } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiServiceUnavailableResponse,
  ApiTags,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import { WebhookErrorResponse, WebhookQueuedResponse } from './dto/webhook.responses';
import { WebhookService } from './webhook.service';

@ApiTags('ingestion')
@Controller('imgsrv')
export class WebhookController {
  constructor(private readonly webhooks: WebhookService) {}

  @Post('webhook')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Public, guarded by X-Webhook-Secret: the image server reports a stable study; the study is queued',
    description:
      'Only `ID` is read. The body is accepted as JSON, text/plain or a form whose key is the JSON text ' +
      '(what Orthanc sends without a Content-Type).',
  })
  @ApiHeader({ name: 'X-Webhook-Secret', required: true, description: 'Secret shared with the image server hook' })
  @ApiBody({ schema: { type: 'object', properties: { ID: { type: 'string' } }, required: ['ID'] } })
  @ApiOkResponse({ type: WebhookQueuedResponse })
  @ApiUnauthorizedResponse({ type: WebhookErrorResponse, description: '`{error: "Unauthorized"}`' })
  @ApiBadRequestResponse({ type: WebhookErrorResponse, description: '`{error: "ID not provided"}`' })
  @ApiServiceUnavailableResponse({ description: 'The queue (Redis) is unreachable' })
  receive(@Headers('x-webhook-secret') secret: string | undefined, @Body() body: unknown): Promise<WebhookQueuedResponse> {
    return this.webhooks.receive(secret, body);
  }
}
