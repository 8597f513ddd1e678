import { Inject, Injectable, Logger } from '@nestjs/common';
import { Errors } from '../common/errors/api-errors';
import { APP_CONFIG } from '../config/config.module';
import { AppConfig } from '../config/environment';
import { WebhookQueuedResponse } from './dto/webhook.responses';
import { IngestionQueue } from './ingestion-queue.service';
import { extractStudyId, secretMatches } from './webhook-request';

/** The image server's "study is stable" notification: checked, then queued; the work happens in the worker. */
@Injectable()
export class WebhookService {
  private readonly logger = new Logger('Webhook');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly queue: IngestionQueue,
  ) {}

  async receive(secret: unknown, body: unknown): Promise<WebhookQueuedResponse> {
    if (!secretMatches(secret, this.config.WEBHOOK_SECRET)) throw Errors.webhookUnauthorized();
    const id = extractStudyId(body);
    if (!id) throw Errors.webhookIdMissing();
    try {
      await this.queue.queueStudy(id, 'webhook');
    } catch (error) {
      // Redis is down: the reconciliation job will still find the study in the change feed.
      this.logger.error(`could not queue study ${id}: ${(error as Error).message}`);
      throw Errors.serviceUnavailable();
    }
    return { status: 'queued', ID: id };
  }
}
