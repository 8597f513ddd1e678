import { Module } from '@nestjs/common';
import { ImgsrvClient } from './imgsrv.client';

/** The only client of Orthanc's REST API. Not global: only ingestion and studies import it. */
@Module({ providers: [ImgsrvClient], exports: [ImgsrvClient] })
export class ImgsrvModule {}
