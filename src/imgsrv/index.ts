// The image-server client's public surface: what other features may import (see eslint.config.mjs).
export { ImgsrvModule } from './imgsrv.module';
export { ImgsrvClient, ImgsrvError } from './imgsrv.client';
export type * from './imgsrv.types';
