import { Module } from '@nestjs/common';
import { QueuesModule } from '../common/queues/queues.module';
import { MetricsModule } from '../operations';
import { DoorRepository } from './door/door.repository';
import { DoorService } from './door/door.service';
import { IngestionQueue } from './ingestion-queue.service';
import { WebhookController } from './webhook.controller';
import { WebhookService } from './webhook.service';

/** API side of ingestion: the image-server webhook, which only queues jobs, and the study's door. */
@Module({
  imports: [QueuesModule, MetricsModule],
  controllers: [WebhookController],
  providers: [WebhookService, IngestionQueue, DoorRepository, DoorService],
})
export class IngestionModule {}
