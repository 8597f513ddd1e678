import { Module } from '@nestjs/common';
import { QueuesModule } from '../common/queues/queues.module';
import { IngestionQueue } from './ingestion-queue.service';
import { WebhookController } from './webhook.controller';
import { WebhookService } from './webhook.service';

/** API side of ingestion: the image-server webhook, which only queues jobs. */
@Module({
  imports: [QueuesModule],
  controllers: [WebhookController],
  providers: [WebhookService, IngestionQueue],
})
export class IngestionModule {}
