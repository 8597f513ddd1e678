import { Module } from '@nestjs/common';

/** Worker side of ingestion: the queue processors. Only the worker process imports it. */
@Module({})
export class IngestionWorkerModule {}
