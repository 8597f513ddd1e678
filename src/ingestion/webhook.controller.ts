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
import { DoorDecision } from './door/door-decision';
import { DoorDecisionResponse } from './door/door.responses';
import { DoorService } from './door/door.service';
import { WebhookErrorResponse, WebhookQueuedResponse } from './dto/webhook.responses';
import { WebhookService } from './webhook.service';

const SENDER = {
  type: 'object',
  properties: { Origin: { type: 'string' }, Aet: { type: 'string' }, Ip: { type: 'string' } },
};

@ApiTags('ingestion')
@Controller('imgsrv')
export class WebhookController {
  constructor(
    private readonly webhooks: WebhookService,
    private readonly door: DoorService,
  ) {}

  @Post('webhook')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Public, guarded by X-Webhook-Secret: the image server reports a stable study; the study is queued',
    description:
      'Only `ID` is read. The body is read whatever its Content-Type, or with none: JSON, a JSON text of ' +
      'any other type, a form field `ID`, or a form whose key is the JSON text (what Orthanc sends without a Content-Type).',
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

  @Post('door')
  @HttpCode(200)
  @ApiOperation({
    summary: "For the image server, guarded by X-Webhook-Secret: may this device's instance enter this study?",
    description:
      'Asked by docker/orthanc/webhook.lua for an instance arriving over DICOM (docs/dicom-door.md). A refusal is ' +
      'logged and counted (`pacs_dicom_door_refused_total`); the image server then answers the C-STORE with 0xA700.',
  })
  @ApiHeader({ name: 'X-Webhook-Secret', required: true, description: 'Secret shared with the image server hook' })
  @ApiBody({
    schema: {
      type: 'object',
      properties: {
        StudyInstanceUID: { type: 'string' },
        PatientID: { type: 'string' },
        Sender: SENDER,
        Holder: { ...SENDER, description: "Sender of the held study's first instance" },
        Replaces: { ...SENDER, description: 'Sender of the stored instance with the same SOPInstanceUID' },
        HeldForOtherPatient: { type: 'boolean' },
      },
      required: ['Sender'],
    },
  })
  @ApiOkResponse({ type: DoorDecisionResponse })
  @ApiUnauthorizedResponse({ type: WebhookErrorResponse, description: '`{error: "Unauthorized"}`' })
  @ApiBadRequestResponse({ type: WebhookErrorResponse, description: '`{error: "Invalid door request"}`' })
  @ApiServiceUnavailableResponse({ description: 'The database is unreachable (the image server then refuses)' })
  decide(@Headers('x-webhook-secret') secret: string | undefined, @Body() body: unknown): Promise<DoorDecision> {
    return this.door.decide(secret, body);
  }
}
