import { Global, Module } from '@nestjs/common';
import { ImgsrvClient } from './imgsrv.client';

@Global()
@Module({ providers: [ImgsrvClient], exports: [ImgsrvClient] })
export class ImgsrvModule {}
