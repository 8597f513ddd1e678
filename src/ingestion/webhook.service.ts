import { HttpStatus, Inject, Injectable, Logger } from '@nestjs/common';
import { ApiError } from '../common/errors/api-errors';
import { APP_CONFIG } from '../config/config.module';
import { AppConfig } from '../config/environment';
import { WebhookQueuedResponse } from './dto/webhook.responses';
import { IngestionQueue } from './ingestion-queue.service';
import { extractStudyId, secretMatches } from './webhook-request';

export const WebhookErrors = {
  unauthorized: () => new ApiError(HttpStatus.UNAUTHORIZED, { error: 'Unauthorized' }),
  idNotProvided: () => new ApiError(HttpStatus.BAD_REQUEST, { error: 'ID not provided' }),
  unavailable: () => new ApiError(HttpStatus.SERVICE_UNAVAILABLE, { message: 'Service unavailable.' }),
};

/** The image server's "study is stable" notification: checked, then queued; the work happens in the worker. */
@Injectable()
export class WebhookService {
  private readonly logger = new Logger('Webhook');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly queue: IngestionQueue,
  ) {}

  async receive(secret: unknown, body: unknown): Promise<WebhookQueuedResponse> {
    if (!secretMatches(secret, this.config.WEBHOOK_SECRET)) throw WebhookErrors.unauthorized();
    const id = extractStudyId(body);
    if (!id) throw WebhookErrors.idNotProvided();
    try {
      await this.queue.queueStudy(id, 'webhook');
    } catch (error) {
      // Redis is down: the reconciliation job will still find the study in the change feed.
      this.logger.error(`could not queue study ${id}: ${(error as Error).message}`);
      throw WebhookErrors.unavailable();
    }
    return { status: 'queued', ID: id };
  }
}
