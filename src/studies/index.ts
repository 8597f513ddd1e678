// The studies feature's public surface: what other features may import (see eslint.config.mjs).
export { StudiesModule } from './studies.module';
export { StudiesRepository } from './studies.repository';
export type { StudyPlace } from './studies.repository';
export type { StudyToExchange } from './studies.repository';
export { startedStream } from './study-images.service';
export { StudiesService } from './studies.service';
export * from './dto/study.responses';
