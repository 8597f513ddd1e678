import { Global, Module } from '@nestjs/common';
import { FairShareCounters } from './fair-share';
import { FairShareInterceptor } from './fair-share.interceptor';

/**
 * The fair share of expensive requests. Global, like the access trail: `@FairShare()` builds its
 * interceptor in the module of whichever controller carries it, and all of them must share one set
 * of counters.
 */
@Global()
@Module({ providers: [FairShareCounters, FairShareInterceptor], exports: [FairShareCounters, FairShareInterceptor] })
export class FairShareModule {}
