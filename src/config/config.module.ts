import { Global, Module } from '@nestjs/common';
import { AppConfig, loadConfig } from './environment';

export const APP_CONFIG = Symbol('APP_CONFIG');

/** Global: the validated configuration is read by nearly every module, and it is read-only. */
@Global()
@Module({
  providers: [{ provide: APP_CONFIG, useFactory: (): AppConfig => loadConfig() }],
  exports: [APP_CONFIG],
})
export class ConfigModule {}
