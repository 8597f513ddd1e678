import { Module } from '@nestjs/common';

/** API side of ingestion: the image-server webhook, which only queues jobs. */
@Module({})
export class IngestionModule {}
